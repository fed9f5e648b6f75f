package sparkbloom.lakehouse

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

import sparkbloom.BloomConf
import sparkbloom.index.{ResolvedTable, TableRef}
import sparkbloom.optimizer.{BloomSkippingRule, FsRelation}

/**
 * Delta Lake and Apache Iceberg tables: resolving them for indexing, and pruning their scans.
 *
 * sparkbloom is compiled against delta-spark and iceberg-spark-runtime but ships neither: a session without
 * them never loads [[DeltaSupport]] or [[IcebergSupport]] (every entry point first checks, by class name,
 * that the plan or the classpath holds the format), so plain Parquet users need neither jar.
 *
 * Each format's support is compiled for the Spark lines its project publishes artifacts for (the
 * `lakehouse.<line>` rows of project/versions.properties); on other lines a stub of the same name
 * (`scala-src/lakehouse/delta-none`, `iceberg-none`) says `compiled = false`, so such tables are never
 * pruned and an index cannot be built on them (they are refused as not Parquet).
 */
object Lakehouse {
  private val log = org.slf4j.LoggerFactory.getLogger(getClass)

  private def present(cls: String): Boolean =
    try { Class.forName(cls, false, Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)); true }
    catch { case _: ClassNotFoundException | _: LinkageError => false }
  // The class check comes first: touching DeltaSupport / IcebergSupport links the format's own classes.
  lazy val deltaPresent: Boolean = present("org.apache.spark.sql.delta.DeltaLog") && DeltaSupport.compiled
  lazy val icebergPresent: Boolean = present("org.apache.iceberg.spark.source.SparkTable") && IcebergSupport.compiled

  /**
   * A Delta or Iceberg table for indexing, listed at its newest snapshot (both formats always read their log
   * or metadata afresh here); None for anything else (plain Parquet is resolved by the caller).
   */
  def resolve(spark: SparkSession, ref: TableRef): Option[ResolvedTable] =
    if (!deltaPresent && !icebergPresent) None
    else {
      // A catalog name is analysed once for both formats (None: no such table; the caller says so).
      lazy val analyzed = ref match {
        case TableRef.Catalog(name) => try Some(spark.table(name).queryExecution.analyzed) catch { case NonFatal(_) => None }
        case _ => None
      }
      (if (deltaPresent) DeltaSupport.resolve(spark, ref, analyzed) else None)
        .orElse(if (icebergPresent) IcebergSupport.resolve(spark, ref, analyzed) else None)
    }

  /** The table a DataFrame's Delta relation or Iceberg relation reads (for `df.bloomFilterIndex`). */
  def tableRef(plan: LogicalPlan): Option[TableRef] = plan match {
    case FsRelation(_, rel, _, _, _) if deltaPresent && DeltaSupport.isDeltaIndex(rel.location) => DeltaSupport.tableRef(plan)
    case r: DataSourceV2Relation if isIcebergTable(r.table) => IcebergSupport.tableRef(r)
    case _ => None
  }

  /** Exactly Iceberg's Spark table (not a table sparkbloom already wrapped, nor a metadata table's class). */
  def isIcebergTable(t: Table): Boolean =
    icebergPresent && t.getClass.getName == "org.apache.iceberg.spark.source.SparkTable"

  /** The relation to read instead of `r` so that its scan drops files the indexes rule out (see [[IcebergSupport]]). */
  def rewriteIceberg(session: SparkSession, root: LogicalPlan, cond: Expression,
                     r: DataSourceV2Relation): Option[DataSourceV2Relation] =
    if (!icebergPresent || rewritesRows(root)) None
    else try IcebergSupport.rewrite(session, cond, r) catch {
      case NonFatal(e) => log.warn(s"sparkbloom: Iceberg scan of ${r.table.name()} left as it was after an error: $e"); None
    }

  /**
   * MERGE / UPDATE / DELETE and their rewritten forms: their reads decide which rows and files get rewritten,
   * so they are never touched, whatever they read.
   */
  private val RowLevelNodes = Set("MergeIntoTable", "UpdateTable", "DeleteFromTable", "ReplaceData", "WriteDelta",
    "MergeRows", "UpdateRows", "RowLevelWrite")
  def rewritesRows(plan: LogicalPlan): Boolean =
    plan.exists(p => RowLevelNodes.contains(p.getClass.getSimpleName) ||
      p.isInstanceOf[org.apache.spark.sql.catalyst.plans.logical.RowLevelWrite])
}

/**
 * Delta scans, pruned after Delta's own data skipping: Delta's `PrepareDeltaScan` (a pre-CBO rule) swaps the
 * table's log file index for a `PreparedDeltaFileIndex` holding the files its min/max statistics keep, and this
 * rule, injected after it, wraps that index in a [[BloomDeltaFileIndex]]. Pre-CBO rules run in the order the
 * extensions were listed, so `spark.sql.extensions` must list Delta's extension first; listed the other way
 * round this rule finds no prepared index and does nothing (no pruning, never a wrong answer).
 */
class LakehousePreCboRule(session: SparkSession) extends Rule[LogicalPlan] {
  /** Said once per session: with sparkbloom listed before Delta, Delta tables are read unpruned. */
  private lazy val checkOrder: Unit = {
    val listed = session.sparkContext.getConf.get("spark.sql.extensions", "").split(",").map(_.trim)
    val mine = listed.indexWhere(_ == classOf[sparkbloom.SparkBloomExtensions].getName)
    val delta = listed.indexWhere(_.endsWith("DeltaSparkSessionExtension"))
    if (mine >= 0 && delta > mine)
      logWarning("sparkbloom: spark.sql.extensions lists sparkbloom.SparkBloomExtensions before Delta's extension, so " +
        "Delta tables are not pruned by bloom indexes; list io.delta.sql.DeltaSparkSessionExtension first " +
        "(sparkbloom.configure() does)")
  }

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!Lakehouse.deltaPresent || !BloomConf.enabled(session)) plan
    else try {
      checkOrder
      plan.transformDown {
        case f @ Filter(cond, FsRelation(l, rel, _, _, false)) if DeltaSupport.isPreparedIndex(rel.location) =>
          DeltaSupport.rewrite(session, BloomSkippingRule.pushable(cond), l, rel)
            .map(n => f.copy(child = n)).getOrElse(f)
      }
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: Delta skipping disabled for this query after an error: $e")
        plan
    }
}
