package sparkbloom

import java.io.File

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.schema.PrimitiveType
import org.apache.spark.sql.DataFrame

import sparkbloom.parquet.NativeFilterReader
import sparkbloom.sbbf.Sbbf

/** Spark writes a DataFrame as one Parquet file with parquet-java bloom filters; we read them back. */
object SparkWrittenFilters {

  final case class Written(filter: Sbbf, physicalType: PrimitiveType)

  /**
   * Writes `df` (one partition, one row group) with a bloom filter of exactly `numBytes` bytes on each of
   * `columns` (parquet-java sizes a filter without an NDV at parquet.bloom.filter.max.bytes). Dictionary
   * encoding is off: parquet-java writes no filter for a chunk whose pages are all dictionary-encoded.
   */
  def write(df: DataFrame, dir: File, columns: Seq[String], numBytes: Int,
            options: Map[String, String] = Map.empty): Map[String, Written] = {
    val writer = columns.foldLeft(df.coalesce(1).write.mode("overwrite")
        .option("parquet.bloom.filter.max.bytes", numBytes.toString)
        .option("parquet.enable.dictionary", "false")
        .options(options)) { (w, c) => w.option(s"parquet.bloom.filter.enabled#$c", "true") }
    writer.parquet(dir.getAbsolutePath)
    read(parquetFile(dir))
  }

  def parquetFile(dir: File): File = {
    val files = dir.listFiles().filter(f => f.getName.endsWith(".parquet"))
    require(files.length == 1, s"expected one Parquet file in $dir, found ${files.mkString(", ")}")
    files.head
  }

  /** The filter of every column chunk that has one (the file must have one row group). */
  def read(file: File): Map[String, Written] = {
    val input = HadoopInputFile.fromPath(new Path(file.toURI), new Configuration())
    val reader = ParquetFileReader.open(input)
    try {
      val groups = reader.getRowGroups.asScala
      require(groups.size == 1, s"expected one row group, found ${groups.size}")
      val in = input.newStream()
      try groups.head.getColumns.asScala.flatMap { c =>
          NativeFilterReader.read(in, input.getLength, c).map(f =>
            c.getPath.toDotString -> Written(f, c.getPrimitiveType))
        }.toMap
      finally in.close()
    } finally reader.close()
  }
}
