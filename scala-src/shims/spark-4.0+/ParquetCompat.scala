package sparkbloom.shims

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.ParquetReadOptions
import org.apache.parquet.conf.{HadoopParquetConfiguration, ParquetConfiguration}
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.{ColumnChunkMetaData, ParquetMetadata}

/** parquet-java 1.15 and later (Spark 4.0 and later) read `bloom_filter_length`. */
object ParquetCompat {
  val storedLengthReadable: Boolean = true
  /** `bloom_filter_length` when present (parquet-java reports an absent one as a negative number). */
  def storedBloomLength(column: ColumnChunkMetaData): Option[Int] = {
    val len = column.getBloomFilterLength
    if (len < 0) None else Some(len)
  }

  /**
   * The configuration behind `ParquetFileReader.open(file)`'s default read options, built once per JVM:
   * `ParquetReadOptions.builder()` creates (and parses the XML of) a fresh Hadoop Configuration on every
   * call, which cost more than reading the footer and the pages of a small file. Same settings, read once.
   */
  private lazy val defaultConf: ParquetConfiguration = new HadoopParquetConfiguration(new Configuration())

  def readOptions(): ParquetReadOptions = ParquetReadOptions.builder(defaultConf).build()

  /** A reader over `path` using a footer read earlier, so it is not read again. */
  def openWithFooter(conf: Configuration, path: Path, footer: ParquetMetadata): ParquetFileReader =
    new ParquetFileReader(conf, path, footer, readOptions())
}
