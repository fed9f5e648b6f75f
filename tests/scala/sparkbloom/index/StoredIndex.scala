package sparkbloom.index

import java.nio.file.{Files, Paths}

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import sparkbloom.api.BloomIndexes

/** Tests' view of an index as stored: its newest version, and one filter's bitset read back from its segment. */
object StoredIndex {
  def loaded(spark: SparkSession, dir: String, name: String): IndexVersion = {
    val conf = spark.sessionState.newHadoopConf()
    val idx = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), name)
    val fs = idx.getFileSystem(conf)
    IndexStore.load(fs, conf, idx, IndexStore.latestMeta(fs, idx)._1.get)
  }

  /** The bitset bytes of (column, row group), read back from its block-major segment; null without a filter. */
  def filterBytes(v: IndexVersion, column: String, rg: Int): Array[Byte] = {
    val c = v.layout.column(column).get
    if (c.segment(rg) < 0) return null
    val seg = v.layout.segments(c.segment(rg))
    val file = Files.readAllBytes(Paths.get(new Path(v.dir, seg.file).toUri))
    val out = new Array[Byte](seg.blocks * 32)
    for (b <- 0 until seg.blocks) System.arraycopy(file, (b * seg.runStride + c.slot(rg) * 32).toInt, out, b * 32, 32)
    out
  }
}
