package sparkbloom.parquet

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.example.data.Group
import org.apache.parquet.hadoop.{ParquetFileReader, ParquetReader}
import org.apache.parquet.hadoop.example.GroupReadSupport
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData
import org.apache.parquet.hadoop.util.HadoopInputFile

import sparkbloom.TestSupport
import sparkbloom.sbbf.Sbbf

/** Reads fixture files with parquet-java: footers, each column chunk's filter, and the rows per row group. */
object ParquetFixtures {
  val conf = new Configuration()

  def path(relative: String): Path = new Path(TestSupport.fixture(relative).toURI)

  final case class Chunk(rowGroup: Int, column: String, meta: ColumnChunkMetaData)

  def chunks(relative: String): Seq[Chunk] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(path(relative), conf))
    try reader.getRowGroups.asScala.zipWithIndex.toSeq.flatMap { case (rg, i) =>
        rg.getColumns.asScala.map(c => Chunk(i, c.getPath.toDotString, c))
      }
    finally reader.close()
  }

  def chunk(relative: String, rowGroup: Int, column: String): Chunk =
    chunks(relative).find(c => c.rowGroup == rowGroup && c.column == column)
      .getOrElse(throw new NoSuchElementException(s"$relative has no row group $rowGroup column $column"))

  /** The filter of one chunk through our reader, honouring bloom_filter_length when the footer has it. */
  def filter(relative: String, c: Chunk): Option[Sbbf] = {
    val file = HadoopInputFile.fromPath(path(relative), conf)
    val in = file.newStream()
    try NativeFilterReader.read(in, file.getLength, c.meta)
    finally in.close()
  }

  /** The filter of one chunk as parquet-java's own BloomFilterReader returns it (null when it cannot). */
  def parquetJavaFilter(relative: String, c: Chunk): org.apache.parquet.column.values.bloomfilter.BloomFilter = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(path(relative), conf))
    try reader.getBloomFilterDataReader(c.rowGroup).readBloomFilter(c.meta)
    finally reader.close()
  }

  /** Every row of the file, grouped by row group (row groups are read in order). */
  def rowsByRowGroup(relative: String): Seq[Seq[Group]] = {
    val counts = {
      val reader = ParquetFileReader.open(HadoopInputFile.fromPath(path(relative), conf))
      try reader.getRowGroups.asScala.map(_.getRowCount.toInt).toSeq
      finally reader.close()
    }
    val reader = ParquetReader.builder(new GroupReadSupport(), path(relative)).withConf(conf).build()
    try {
      val all = Iterator.continually(reader.read()).takeWhile(_ != null).toVector
      assert(all.size == counts.sum)
      counts.scanLeft(0)(_ + _).sliding(2).map { case Seq(a, b) => all.slice(a, b) }.toSeq
    } finally reader.close()
  }
}
