package sparkbloom.shims

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.ParquetReadOptions
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.{ColumnChunkMetaData, ParquetMetadata}

/**
 * parquet-java 1.13 (Spark 3.5) does not read `bloom_filter_length`, so a header whose size disagrees with
 * the stored length (a corrupt filter that would give false negatives) cannot be detected. Filters are then
 * trusted only from parquet-java's own writer, whose header always matches what it wrote.
 */
object ParquetCompat {
  def readOptions(): ParquetReadOptions = ParquetReadOptions.builder().build()

  /** A reader over `path` using a footer read earlier, so it is not read again. */
  def openWithFooter(conf: Configuration, path: Path, footer: ParquetMetadata): ParquetFileReader =
    new ParquetFileReader(conf, path, footer)

  val storedLengthReadable: Boolean = false
  def storedBloomLength(column: ColumnChunkMetaData): Option[Int] = None
}
