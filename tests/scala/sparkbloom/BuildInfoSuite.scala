package sparkbloom

import org.apache.spark.sql.SparkSession
import org.scalatest.funsuite.AnyFunSuite

/** The jar knows its Spark line and refuses a session of another line, naming both. */
class BuildInfoSuite extends AnyFunSuite {
  private val scalaBin = _root_.scala.util.Properties.versionNumberString.split('.').take(2).mkString(".")

  test("the jar's line is the Spark it runs on in this build") {
    assert(BuildInfo.sparkVersion.split('.').take(2).sameElements(org.apache.spark.SPARK_VERSION.split('.').take(2)))
    assert(BuildInfo.scalaBinary == scalaBin)
    assert(BuildInfo.mismatch(org.apache.spark.SPARK_VERSION, scalaBin).isEmpty)
    // any patch release of the line is accepted
    val Array(major, minor) = BuildInfo.sparkVersion.split('.').take(2)
    assert(BuildInfo.mismatch(s"$major.$minor.99", scalaBin).isEmpty)
  }

  test("another Spark line, or the other Scala, is refused with a message naming both") {
    val Array(major, minor) = BuildInfo.sparkVersion.split('.').take(2).map(_.toInt)
    val other = s"$major.${minor + 1}.0"
    val why = BuildInfo.mismatch(other, scalaBin)
    assert(why.exists(m =>
        m.contains(s"built for Spark $major.$minor (Scala $scalaBin)") && m.contains(s"runs Spark $other")), why)
    assert(BuildInfo.mismatch(org.apache.spark.SPARK_VERSION, if (scalaBin == "2.13") "2.12" else "2.13").nonEmpty)
  }

  test("a session with the extension starts on this jar's line (the check passes where it must)") {
    val spark = SparkSession.builder().master("local[1]").config("spark.ui.enabled", "false")
      .config("spark.sql.extensions", classOf[SparkBloomExtensions].getName).getOrCreate()
    try assert(spark.sql("SELECT sbbf_num_bytes(1000, 0.01)").head().getInt(0) > 0)
    finally spark.stop()
  }
}
