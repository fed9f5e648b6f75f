package sparkbloom.optimizer

import scala.collection.mutable

import sparkbloom.encoding.ValueHasher
import sparkbloom.hash.ColumnEncoding
import sparkbloom.index.{ColumnFilter, RowGroupEntry}
import sparkbloom.optimizer.BloomPredicate._

/**
 * Evaluates a [[BloomPredicate]] against one row group's filters. Literals are hashed once per column
 * encoding (files of one table may differ: INT32 vs INT64, micros vs INT96) and probed as a batch.
 * Unsure means "might match": a missing filter, an unknown encoding, a value that cannot be encoded.
 *
 * `int96Probes = false` (Spark's `spark.sql.parquet.int96TimestampConversion` is on) keeps every INT96 chunk:
 * Spark then shifts INT96 values of non-Spark files by a time zone when reading, so the stored bytes are
 * not the literal's bytes.
 */
final class RowGroupEvaluator(predicate: BloomPredicate, int96Probes: Boolean = true) {
  private val hashCache = mutable.HashMap[(In, ColumnEncoding), Array[Long]]()

  def mightMatch(rg: RowGroupEntry): Boolean = eval(predicate, rg)

  private def eval(p: BloomPredicate, rg: RowGroupEntry): Boolean = p match {
    case Unknown => true
    case Nothing => false
    case IsNull(c) => rg.columns.get(c).forall(_.hasNull)
    case in: In => rg.columns.get(in.column).forall(cf => mightContain(in, cf))
    case And(l, r) => eval(l, rg) && eval(r, rg)
    case Or(l, r) => eval(l, rg) || eval(r, rg)
  }

  private def mightContain(in: In, cf: ColumnFilter): Boolean = {
    if (cf.nonNull == 0) false // only nulls in this chunk (or the column is absent from the file)
    else if (cf.filter == null || cf.encoding == null) true
    else if (!int96Probes && cf.encoding.physical == "INT96") true
    else {
      val hs = hashCache.getOrElseUpdate((in, cf.encoding), hashesOf(in, cf.encoding))
      hs == null || cf.filter.mightContainAny(hs)
    }
  }

  /** All hashes of the IN list for one encoding, or null if any value cannot be hashed exactly. */
  private def hashesOf(in: In, enc: ColumnEncoding): Array[Long] = {
    val out = mutable.ArrayBuilder.make[Long]
    val it = in.values.iterator
    while (it.hasNext) {
      val hs = ValueHasher.hashes(it.next(), in.dataType, enc)
      if (hs == null) return null
      out ++= hs
    }
    out.result()
  }
}
