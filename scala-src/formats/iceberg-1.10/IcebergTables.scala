package sparkbloom.formats.iceberg

import org.apache.iceberg.spark.source.SparkTable
import org.apache.iceberg.util.SnapshotUtil

import sparkbloom.index.{IndexPruner, PrunedSource}

/** Iceberg's Spark table over a [[PrunedIcebergTable]]; compares unequal to the table it replaces. */
class BloomSparkTable(val pruned: PrunedIcebergTable, snapshotId: java.lang.Long)
  extends SparkTable(pruned, snapshotId, false) with PrunedSource {
  def pruner: IndexPruner = pruned.pruner
  override def toString: String = s"${super.toString} (bloom indexes [${pruner.indexNames}] [${pruner.predicateSql}])"
  override def equals(o: Any): Boolean = o match {
    case b: BloomSparkTable => (b eq this) ||
      (b.pruned.delegate == pruned.delegate && b.snapshotId() == snapshotId() &&
        b.branch() == branch() && b.pruner.predicateSql == pruner.predicateSql &&
        b.pruner.indexNames == pruner.indexNames)
    case _ => false
  }
  override def hashCode(): Int = pruned.delegate.hashCode() * 31 + pruner.predicateSql.hashCode
}

/**
 * Iceberg 1.10 (Spark 3.5 and 4.0): `SparkTable`'s constructors take the snapshot or branch read, so every
 * read (time travel and branches included) gets the same table over the pruned one.
 */
object IcebergTables {
  /**
   * The schema `st` reads with: its snapshot's for time travel (a snapshot id is set only then), its branch's, or the
   * current one.
   */
  def readSchema(table: org.apache.iceberg.Table, st: SparkTable): Option[org.apache.iceberg.Schema] = Some(
    if (st.snapshotId() != null) SnapshotUtil.schemaFor(table, st.snapshotId().longValue())
    else if (st.branch() != null) SnapshotUtil.schemaFor(table, st.branch())
    else table.schema())

  /** Iceberg's read settings for `table` with no per-read options (1.10 takes them as a plain map). */
  def readConf(spark: org.apache.spark.sql.SparkSession, table: org.apache.iceberg.Table)
      : org.apache.iceberg.spark.SparkReadConf =
    new org.apache.iceberg.spark.SparkReadConf(spark, table, java.util.Collections.emptyMap[String, String]())

  /** None: Iceberg 1.10's scan builder asks the scan for the snapshot or branch of every read itself. */
  def scanPin(st: SparkTable): Option[Long] = None

  def swap(pruned: PrunedIcebergTable, original: SparkTable): Option[SparkTable] = Some(
    if (original.branch() != null) {
      // Iceberg's branch constructor: scans read the branch through SparkTable's own handling of it.
      new BloomBranchSparkTable(pruned, original.branch())
    } else new BloomSparkTable(pruned, original.snapshotId()))
}

/** A read of a branch (`VERSION AS OF 'branch'`, `branch_x` identifiers). */
class BloomBranchSparkTable(val pruned: PrunedIcebergTable, branchName: String)
  extends SparkTable(pruned, branchName, false) with PrunedSource {
  def pruner: IndexPruner = pruned.pruner
  override def equals(o: Any): Boolean = o match {
    case b: BloomBranchSparkTable => (b eq this) ||
      (b.pruned.delegate == pruned.delegate && b.branch() == branch() &&
        b.pruner.predicateSql == pruner.predicateSql && b.pruner.indexNames == pruner.indexNames)
    case _ => false
  }
  override def hashCode(): Int = pruned.delegate.hashCode() * 37 + pruner.predicateSql.hashCode
}
