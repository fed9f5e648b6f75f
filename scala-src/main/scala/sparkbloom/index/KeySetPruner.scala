package sparkbloom.index

import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.ExprId
import org.apache.spark.sql.types.DataType
import org.slf4j.LoggerFactory

import sparkbloom.BloomConf
import sparkbloom.predicate.BloomPredicate

/** The distinct key values another part of the plan produced, read when a scan lists its files. */
trait KeySource {
  /** Catalyst (internal) values of the pruning key's type; may run or wait for a Spark job. */
  def keys(): Array[Any]
  /** How EXPLAIN and the metrics name the pruning of `column` by these keys. */
  def label(column: String): String = s"$column IN (run-time keys)"
}

/**
 * A source (a file index) whose files are chosen at execution by keys known only then: the relation's
 * `keyAttr` column is equated with what a join's other side, an `IN (subquery)` or an `EXISTS` produces. The
 * physical plan binds it to the [[KeySource]] of that plan's run-time filter; unbound, it reads everything.
 */
trait RuntimeKeyed {
  def keySet: KeySetPruner
  /** The same file index, reading `src` when it lists its files. */
  def bind(src: KeySource): org.apache.spark.sql.execution.datasources.FileIndex
}

/**
 * The run-time half of key-set pruning: given the keys, the files and row groups of a listing that may hold
 * one of them, through the same batched index probe a literal `IN` uses ([[IndexPruner]]).
 *
 *  - `indexes`: each index covering the column, and the column's name in it.
 *  - `nullFor`: with `<=>`, the join compares `coalesce(c, d)`; a key equal to `d` may stand for NULL, so
 *    it is probed as both (`IS NULL` included).
 *  - Declined (None: read the listing whole) when unbound, when the keys exceed the cap, or when they would
 *    keep more than `maxKeptFraction` of the indexed row groups (k true + k x budget false).
 */
final class KeySetPruner(
    val session: SparkSession,
    val indexes: Seq[(IndexVersion, String)],
    val keyAttr: ExprId,
    val dataType: DataType,
    val nullFor: Option[Any],
    val selection: RowGroupSelection,
    val tableName: String,
    val int96Probes: Boolean,
    val label: String,
    val source: Option[KeySource] = None) {

  private val log = LoggerFactory.getLogger(getClass)

  /** The decision EXPLAIN and the metrics node show before (and, if declined, after) the keys are known. */
  private val template = new IndexPruner(session,
    indexes.map { case (v, c) => v -> (BloomPredicate.In(c, dataType, Nil): BloomPredicate) }, selection, tableName,
    int96Probes, shown = Some(label))
  @volatile private var last: IndexPruner = template

  def pruner: IndexPruner = last
  def bound: Boolean = source.isDefined
  def bind(src: KeySource): KeySetPruner =
    new KeySetPruner(session, indexes, keyAttr, dataType, nullFor, selection, tableName, int96Probes, label,
      Some(src))

  /** Budget of false row groups per key, as the indexes were sized (the loosest of them). */
  private def budget: Double = indexes.map(_._1.meta.falseReadsPerKey.getOrElse(BloomConf.DefaultFalseReadsPerKey))
    .foldLeft(0.0)(math.max)

  /** The positions in `statuses` to read, or None to read them all. Exceptions reach the caller (read all). */
  def keep(statuses: Array[FileStatus]): Option[java.util.BitSet] = source match {
    case None => None
    case Some(src) =>
      val t0 = System.nanoTime()
      val keys = src.keys().distinct
      val cap = BloomConf.runtimeMaxKeys(session)
      val rowGroups = indexes.map(_._1.layout.numRowGroups.toLong).foldLeft(0L)(math.max)
      val keptShare = if (rowGroups == 0) 0.0 else keys.length * (1.0 + budget) / rowGroups
      val n = keys.length
      if (n > cap) decline(statuses.length, n, s"$n keys, over the cap of $cap (${BloomConf.RuntimeMaxKeys})")
      else if (keptShare > BloomConf.runtimeMaxKeptFraction(session))
        decline(statuses.length, n,
          f"$n keys would keep about ${keptShare * 100}%.0f%% of $rowGroups row groups " +
            s"(${BloomConf.RuntimeMaxKeptFraction})")
      else {
        val nonNull = keys.filter(_ != null)
        val withNull = keys.contains(null) || nullFor.exists(d => nonNull.exists(KeySetPruner.sameValue(_, d)))
        val preds = indexes.map { case (v, c) =>
          val in: BloomPredicate =
            if (nonNull.isEmpty) BloomPredicate.Nothing else BloomPredicate.In(c, dataType, nonNull.toSeq)
          v -> (if (withNull && nullFor.isDefined) BloomPredicate.or(in, BloomPredicate.IsNull(c)) else in)
        }
        val p = new IndexPruner(session, preds, selection, tableName, int96Probes,
          shown = Some(s"$label: ${keys.length} keys"), keysProbed = keys.length)
        last = p
        val kept = p.keep(statuses)
        log.info(s"sparkbloom: run-time keys for $tableName: ${keys.length} keys, " +
          s"${(System.nanoTime() - t0) / 1000000} ms with the keys' collection")
        Some(kept)
      }
  }

  private def decline(files: Int, keys: Int, why: String): Option[java.util.BitSet] = {
    log.info(s"sparkbloom: run-time pruning of $tableName declined: $why")
    val p = new IndexPruner(session, template.indexes, selection, tableName, int96Probes,
      shown = Some(s"$label: declined, $why"), keysProbed = keys)
    p.lastSkipping = Some(ScanSkipping(indexes.map(i => s"${i._1.meta.name} on ${i._1.meta.table}").distinct
        .mkString(", "), tableName, p.predicateSql, files, files, 0L, 0L, 0L, keysProbed = keys))
    last = p
    None
  }
}

object KeySetPruner {
  /** Equality of two Catalyst values (binary values are arrays). */
  def sameValue(a: Any, b: Any): Boolean = (a, b) match {
    case (x: Array[Byte], y: Array[Byte]) => java.util.Arrays.equals(x, y)
    case _ => a == b
  }
}
