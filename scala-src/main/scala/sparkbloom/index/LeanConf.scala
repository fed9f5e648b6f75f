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
  override def write(out: DataOutput): Unit = {
    val props = getProps
    // a snapshot under the Properties' lock, as Configuration.write iterates them under the conf's
    val entries = props.synchronized(props.asScala.toVector)
    WritableUtils.writeVInt(out, entries.size)
    for ((k, v) <- entries) {
      Text.writeString(out, k)
      Text.writeString(out, v)
      out.writeInt(-1) // WritableUtils.writeCompressedStringArray of no sources
    }
  }
}

object LeanConf {
  /** `conf`'s entries as `Configuration.readFields` reads them, without their sources. */
  def write(conf: Configuration, out: DataOutput): Unit = conf match {
    case l: LeanConf => l.write(out)
    case c => new LeanConf(c).write(out)
  }
}
