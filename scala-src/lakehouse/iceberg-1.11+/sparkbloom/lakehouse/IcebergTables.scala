package sparkbloom.lakehouse

import scala.util.control.NonFatal

import org.apache.iceberg.spark.source.SparkTable

import sparkbloom.scan.{IndexPruner, PrunedSource}

/**
 * Iceberg 1.11+ (Spark 4.1): `SparkTable` pins its snapshot, schema, branch and time travel when it is made,
 * and only its constructor for the newest snapshot of the main branch is public. So only such reads are
 * swapped, and only when the new table pins exactly what the original did; time travel and branch reads
 * are left to Iceberg (read whole, never wrong).
 */
object IcebergTables {
  /**
   * The schema `st` reads with, for the reads [[swap]] takes: the table's current one (a 1.11 `SparkTable`
   * always pins a snapshot id, and a RENAME after that snapshot changes names but not the snapshot).
   */
  def readSchema(table: org.apache.iceberg.Table, st: SparkTable): Option[org.apache.iceberg.Schema] =
    if (st.branch() != null || !timeTravelAbsent(st)) None else Some(table.schema())

  def swap(pruned: PrunedIcebergTable, original: SparkTable): Option[SparkTable] =
    if (original.branch() != null || !timeTravelAbsent(original)) None
    else {
      val t = new BloomSparkTable(pruned)
      if (t.snapshotId() == original.snapshotId() && t.schema() == original.schema()) Some(t) else None
    }

  /** True when `t` is known not to be a time-travel read (its private `timeTravel` field read as null). */
  private def timeTravelAbsent(t: SparkTable): Boolean =
    try {
      val f = classOf[SparkTable].getDeclaredField("timeTravel")
      f.setAccessible(true)
      f.get(t) == null
    } catch { case NonFatal(_) => false }
}

/** Iceberg's Spark table over a [[PrunedIcebergTable]] at its newest snapshot; compares unequal to the table it replaces. */
class BloomSparkTable(val pruned: PrunedIcebergTable) extends SparkTable(pruned) with PrunedSource {
  def pruner: IndexPruner = pruned.pruner
  override def toString: String = s"${super.toString} (bloom indexes [${pruner.indexNames}] [${pruner.predicateSql}])"
  override def equals(o: Any): Boolean = o match {
    case b: BloomSparkTable => (b eq this) || (b.pruned.delegate == pruned.delegate && b.snapshotId() == snapshotId() &&
      b.pruner.predicateSql == pruner.predicateSql && b.pruner.indexNames == pruner.indexNames)
    case _ => false
  }
  override def hashCode(): Int = pruned.delegate.hashCode() * 31 + pruner.predicateSql.hashCode
}
