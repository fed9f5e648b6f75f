package sparkbloom.functions

import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.DataType

import sparkbloom.encoding.SparkEncodings
import sparkbloom.hash.ColumnEncoding

/**
 * How this session's Parquet writer encodes values (`spark.sql.parquet.outputTimestampType`,
 * `spark.sql.parquet.writeLegacyFormat`). Captured when a function call is resolved and carried inside the
 * expression, so every executor hashes a value exactly as the driver's session would write it.
 */
final case class WriterSettings(outputTimestampType: String, legacyFormat: Boolean) {
  def encoding(dt: DataType): Option[ColumnEncoding] = SparkEncodings.writtenBy(dt, outputTimestampType, legacyFormat)
}

object WriterSettings {
  def current: WriterSettings = {
    val conf = SQLConf.get
    WriterSettings(conf.parquetOutputTimestampType.toString, conf.writeLegacyParquetFormat)
  }
}
