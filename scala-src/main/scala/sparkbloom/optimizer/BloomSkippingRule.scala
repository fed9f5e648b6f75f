package sparkbloom.optimizer

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import sparkbloom.BloomConf
import sparkbloom.index.TableFormat
import sparkbloom.index.sliced.IndexCache

/**
 * Pushes the part of a Filter's condition a bloom index can answer (`=`, `<=>`, `IN`, `IS NULL`, AND/OR of them)
 * down to the scan under it: each Filter over a table is offered to the table formats, in their order, and the
 * first that recognises its scan rewrites it to skip the files and row groups the indexes rule out (and, for
 * Parquet scans, to check the files' own bloom filters safely at read time).
 *
 * `phase` says where the rule runs: in the optimizer, or among the pre-CBO rules (after Delta's own data
 * skipping has prepared its scans).
 *
 * Conservative by construction: any exception, an unreadable index or a predicate it does not understand leaves
 * the plan as it was.
 */
class BloomSkippingRule(session: SparkSession, formats: Seq[TableFormat], phase: TableFormat.Phase)
  extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (formats.isEmpty || !BloomConf.enabled(session)) return plan
    IndexCache.setMaxBytes(BloomConf.cacheMaxBytes(session))
    try plan.transformDown {
        case f: Filter => TableFormat.first(formats)(_.rewrite(session, phase, f, plan)).getOrElse(f)
      }
    catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: skipping disabled for this query after an error: $e")
        plan
    }
  }
}
