package sparkbloom.formats.iceberg

import scala.util.control.NonFatal

import org.apache.iceberg.spark.source.SparkTable

import sparkbloom.index.{IndexPruner, PrunedSource}

/**
 * Iceberg 1.11+ (Spark 4.1): `SparkTable` pins the Iceberg schema, snapshot, branch and time travel of a read
 * when it is made, and of its constructors only the one for the newest snapshot of the main branch is public
 * (time travel and branches go through private ones). Every scan `SparkTable` builds takes exactly those four
 * pins. So the swapped table is made with the public constructor and then given the original's pins (the same
 * objects, copied field by field); after the copy it must report the original's snapshot, branch and schema,
 * else nothing is swapped. When a later Iceberg renames or adds such fields the copy fails and the read is
 * left to Iceberg (read whole, never wrong); IcebergSuite notices, since it asserts time travel and branch
 * reads are pruned.
 */
object IcebergTables {
  /** The fields of `SparkTable` (and of its base class) that pin what a read sees; `table` is not one of them. */
  private val pins: Seq[(Class[_], String)] = {
    val base = classOf[SparkTable].getSuperclass
    Seq(classOf[SparkTable] -> "schema", classOf[SparkTable] -> "snapshot", classOf[SparkTable] -> "branch",
      classOf[SparkTable] -> "timeTravel", base -> "schema")
  }

  private def field(owner: Class[_], name: String): java.lang.reflect.Field = {
    val f = owner.getDeclaredField(name)
    f.setAccessible(true)
    f
  }

  /**
   * The Iceberg schema `st` reads with: the one it pinned (the snapshot's for time travel, the branch's for a
   * branch).
   */
  def readSchema(table: org.apache.iceberg.Table, st: SparkTable): Option[org.apache.iceberg.Schema] =
    try Option(field(classOf[SparkTable], "schema").get(st).asInstanceOf[org.apache.iceberg.Schema])
    catch { case NonFatal(_) => None }

  /** Iceberg's read settings for `table` with no per-read options (1.11 takes them as a CaseInsensitiveStringMap). */
  def readConf(spark: org.apache.spark.sql.SparkSession, table: org.apache.iceberg.Table)
      : org.apache.iceberg.spark.SparkReadConf =
    new org.apache.iceberg.spark.SparkReadConf(spark, table, org.apache.spark.sql.util.CaseInsensitiveStringMap.empty())

  /** The snapshot the pruned table's scans read: the one `st` pinned (null only for a table without snapshots). */
  def scanPin(st: SparkTable): Option[Long] = Option(st.snapshotId()).map(_.longValue())

  def swap(pruned: PrunedIcebergTable, original: SparkTable): Option[SparkTable] =
    try {
      val t = new BloomSparkTable(pruned)
      pins.foreach { case (owner, name) => val f = field(owner, name); f.set(t, f.get(original)) }
      val same = pins.forall { case (owner, name) => val f = field(owner, name); f.get(t) eq f.get(original) } &&
        t.snapshotId() == original.snapshotId() && t.branch() == original.branch() && t.schema() == original.schema()
      if (same) Some(t) else None
    } catch { case NonFatal(_) => None }
}

/**
 * Iceberg's Spark table over a [[PrunedIcebergTable]], pinned like the table it replaces; compares unequal to it
 * (and equal only to a swap of the same read with the same indexes and predicate).
 */
class BloomSparkTable(val pruned: PrunedIcebergTable) extends SparkTable(pruned) with PrunedSource {
  def pruner: IndexPruner = pruned.pruner
  override def toString: String = s"${super.toString} (bloom indexes [${pruner.indexNames}] [${pruner.predicateSql}])"
  override def equals(o: Any): Boolean = o match {
    case b: BloomSparkTable => (b eq this) ||
      (b.pruned.delegate == pruned.delegate && b.snapshotId() == snapshotId() &&
        b.branch() == branch() && b.version() == version() && b.schema() == schema() &&
        b.pruner.predicateSql == pruner.predicateSql && b.pruner.indexNames == pruner.indexNames)
    case _ => false
  }
  override def hashCode(): Int = pruned.delegate.hashCode() * 31 + pruner.predicateSql.hashCode
}
