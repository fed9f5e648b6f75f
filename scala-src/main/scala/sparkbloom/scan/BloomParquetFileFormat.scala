package sparkbloom.scan

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

/**
 * Spark's own Parquet format, reading only the row groups that may match. Spark's reader keeps a row
 * group when its midpoint lies in the split; each row group's midpoint lies in its index range
 * [start_i, start_{i+1}), so handing the reader the intersections of the split with the kept ranges reads
 * exactly the kept row groups this split would have read, vectorised or not.
 *
 * It also turns off parquet-java's own bloom-filter row-group filtering for the scan: that filtering trusts
 * whatever filter a file carries (a corrupt header silently drops rows, e.g. DuckDB's
 * `bloom_filter_short_numbytes.parquet`), while the index only ever holds filters it validated (harvested)
 * or built itself, so it already does that job, safely. Statistics and dictionary filtering stay on.
 */
class BloomParquetFileFormat(val selection: RowGroupSelection) extends ParquetFileFormat {

  override def buildReaderWithPartitionValues(
      sparkSession: SparkSession,
      dataSchema: StructType,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration): PartitionedFile => Iterator[InternalRow] = {
    hadoopConf.setBoolean(BloomParquetFileFormat.NativeBloomFiltering, false) // a per-scan copy of the conf
    val read = super.buildReaderWithPartitionValues(sparkSession, dataSchema, partitionSchema, requiredSchema,
      filters, options, hadoopConf)
    val sel = selection
    val minSkip = sparkbloom.BloomConf.minSkipPerExtraRead(sparkSession)
    (file: PartitionedFile) => sel.get(file.toPath.toString) match {
      case None => read(file)
      case Some(ranges) =>
        val s = file.start; val e = file.start + file.length
        val pieces = BloomParquetFileFormat.pieces(ranges, s, e)
        if (BloomParquetFileFormat.readWhole(pieces, s, e, minSkip)) read(file)
        else pieces.iterator.flatMap { case (a, b) => read(file.copy(start = a, length = b - a)) }
    }
  }

  override def toString: String = "Parquet+Bloom"
}

object BloomParquetFileFormat {
  val NativeBloomFiltering = "parquet.filter.bloom.enabled"

  /**
   * Whether to read the split [s, e) whole rather than as `pieces`: only when there is more than one piece and
   * the bytes skipped are under `minSkipPerExtraRead` per extra piece (each piece reopens the file).
   */
  def readWhole(pieces: Seq[(Long, Long)], s: Long, e: Long, minSkipPerExtraRead: Long): Boolean =
    pieces.size > 1 && (e - s) - pieces.iterator.map(p => p._2 - p._1).sum < (pieces.size - 1).toLong * minSkipPerExtraRead

  /** Kept ranges (flattened pairs, sorted or not) merged where adjacent, intersected with [s, e). */
  def pieces(ranges: Array[Long], s: Long, e: Long): Seq[(Long, Long)] = {
    val pairs = ranges.grouped(2).map(a => (a(0), a(1))).toSeq.sortBy(_._1)
    val merged = pairs.foldLeft(List.empty[(Long, Long)]) {
      case ((ps, pe) :: rest, (a, b)) if a <= pe => (ps, math.max(pe, b)) :: rest
      case (acc, r) => r :: acc
    }.reverse
    merged.flatMap { case (a, b) => val lo = math.max(a, s); val hi = math.min(b, e); if (lo < hi) Some(lo -> hi) else None }
  }
}
