package sparkbloom.index

import java.io.DataOutput

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.io.{Text, WritableUtils}

/**
 * A copy of a Hadoop conf whose serialised form leaves out where each entry came from.
 *
 * `Configuration.write` writes, for every entry (about a thousand in a Spark session's conf, defaults included), its
 * sources ("core-default.xml", "programmatically", ...) gzip-compressed: a GZIPOutputStream, and so a Deflater, per
 * entry. Serialising a scan's conf costs the driver about 6-14 ms that way, against 0.3-2 ms without the sources
 * (measured here, 1,072 entries). The stream is the one `Configuration.readFields` reads, each entry's sources absent
 * (as `write` itself writes them for an entry with no recorded source), so the receiving side (Spark's
 * `SerializableConfiguration`, [[SerializableConf]]) is unchanged and gets the same keys and values; the entries read
 * back count as set programmatically, which only Hadoop's diagnostics (`getPropertySources`) show.
 *
 * The scans sparkbloom rewrites hand Spark's Parquet reader this copy (Spark broadcasts whatever conf its reader is
 * given), so their broadcasts cost less than Spark's own.
 */
final class LeanConf(other: Configuration) extends Configuration(other) {
  override def write(out: DataOutput): Unit = LeanConf.write(this, out)
}

object LeanConf {
  /**
   * `conf`'s entries as `Configuration.readFields` reads them, without their sources: any conf (its `iterator` is a
   * snapshot of its string entries, taken under the entries' lock), so shipping one needs no LeanConf copy.
   */
  def write(conf: Configuration, out: DataOutput): Unit = {
    val entries = conf.iterator().asScala.toVector
    WritableUtils.writeVInt(out, entries.size)
    for (e <- entries) {
      Text.writeString(out, e.getKey)
      Text.writeString(out, e.getValue)
      out.writeInt(-1) // WritableUtils.writeCompressedStringArray of no sources
    }
  }
}
