package sparkbloom.scan

import org.apache.spark.sql.execution.SparkPlan

/** What a bloom index did for one scan: kept / total files and row groups. */
final case class ScanSkipping(
    index: String,          // "name on table" of each index used, comma separated
    table: String,
    predicate: String,      // the pushed predicate, as in EXPLAIN
    filesTotal: Long,
    filesKept: Long,
    rowGroupsTotal: Long,
    rowGroupsKept: Long,
    filesNotCovered: Long)  // read because they are new/changed/not in the index

object SkippingReport {
  /** The skipping of every bloom-pruned scan in an executed plan (after the query ran). */
  def forPlan(plan: SparkPlan): Seq[ScanSkipping] = ???
}
