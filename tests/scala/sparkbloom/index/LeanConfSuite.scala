package sparkbloom.index

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.spark.serializer.JavaSerializer
import org.apache.spark.util.SerializableConfiguration

import sparkbloom.testing.SparkSessionSuite

/**
 * LeanConf's serialised form is the one Configuration.readFields reads, with the same keys and values as
 * Configuration.write's; only the entries' sources (gzip-compressed, one Deflater per entry) are left out.
 */
class LeanConfSuite extends SparkSessionSuite {

  private def entries(c: Configuration): Map[String, String] =
    c.iterator().asScala.map(e => e.getKey -> e.getValue).toMap

  private def roundTrip(write: DataOutputStream => Unit): (Configuration, Int) = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    write(out)
    out.flush()
    val read = new Configuration(false)
    read.readFields(new DataInputStream(new ByteArrayInputStream(bytes.toByteArray)))
    (read, bytes.size())
  }

  test("a session's Hadoop conf reads back with the same entries as Configuration.write gives, in fewer bytes") {
    val conf = new Configuration(spark.sessionState.newHadoopConf())
    conf.set("sparkbloom.test.key", "é 日本語")
    conf.set("parquet.filter.stats.enabled", "false")
    val (plain, plainBytes) = roundTrip(out => conf.write(out))
    val (lean, leanBytes) = roundTrip(out => new LeanConf(conf).write(out))
    assert(entries(conf).size > 100, entries(conf).size) // defaults included: what a scan's broadcast carries
    assert(entries(lean) == entries(plain))
    assert(entries(lean) == entries(conf))
    assert(lean.get("sparkbloom.test.key") == "é 日本語" && lean.get("parquet.filter.stats.enabled") == "false")
    assert(leanBytes < plainBytes, s"$leanBytes bytes lean against $plainBytes")
    // the copy itself is the conf it was made from
    assert(entries(new LeanConf(conf)) == entries(conf))
  }

  test("Spark's SerializableConfiguration and sparkbloom's SerializableConf ship a LeanConf's entries whole") {
    val conf = new LeanConf(spark.sessionState.newHadoopConf())
    conf.set("sparkbloom.test.key", "1")
    val ser = new JavaSerializer(spark.sparkContext.getConf).newInstance()
    val spark1 = ser.deserialize[SerializableConfiguration](ser.serialize(new SerializableConfiguration(conf)))
    assert(!spark1.value.isInstanceOf[LeanConf]) // the receiving side is Hadoop's own Configuration
    assert(entries(spark1.value) == entries(conf))
    val ours =
      ser.deserialize[SerializableConf](ser.serialize(new SerializableConf(spark.sessionState.newHadoopConf())))
    assert(entries(ours.value) == entries(spark.sessionState.newHadoopConf()))
  }
}
