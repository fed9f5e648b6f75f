import java.io.File
import java.util.Properties

/**
 * The Spark lines of project/versions.properties, and which shim directories serve each.
 *
 * A line is a row `line.<id> = spark scala parquet pyspark jarsFrom`. A shim directory is named by the
 * Spark versions it serves: `spark-A` (that minor), `spark-A-B` (A to B) or `spark-A+` (A and later),
 * A and B being major.minor versions.
 */
case class SparkLine(id: String, spark: String, scala: String, parquet: String, pyspark: String, jarsFrom: String) {
  /** Spark's major.minor, e.g. (4, 1). */
  val minor: (Int, Int) = SparkLines.majorMinor(spark.split('.').take(2).mkString("."))

  def servedBy(shimDirName: String): Boolean = SparkLines.serves(shimDirName, Map("spark" -> minor))
}

object SparkLines {
  def majorMinor(s: String): (Int, Int) = s.split('.') match {
    case Array(a, b) => (a.toInt, b.toInt)
    case _ => sys.error(s"'$s' is not a major.minor Spark version")
  }

  def load(versions: Properties, id: String): SparkLine =
    Option(versions.getProperty(s"line.$id")).map(_.trim.split("\\s+")) match {
      case Some(Array(spark, scala, parquet, pyspark, from)) => SparkLine(id, spark, scala, parquet, pyspark, from)
      case _ =>
        import scala.collection.JavaConverters._
        val known = versions.stringPropertyNames.asScala.toSeq.filter(_.startsWith("line.")).map(_.drop(5)).sorted
        sys.error(s"sparkbloom.line=$id is not a row of project/versions.properties (lines: ${known.mkString(", ")})")
    }

  /**
   * Whether variant directory `dirName` serves a build whose libraries have the major.minor `versions` (e.g.
   * spark -> (4, 1), iceberg -> (1, 11)). A directory is named by one library and the versions it serves:
   * `<lib>-A` (that minor), `<lib>-A-B` (A to B) or `<lib>-A+` (A and later); a library the build does not
   * have (absent from `versions`) is served by none of its directories.
   */
  def serves(dirName: String, versions: Map[String, (Int, Int)]): Boolean = {
    val ord = implicitly[Ordering[(Int, Int)]]
    val dash = dirName.indexOf('-')
    if (dash <= 0) sys.error(s"variant directory '$dirName' is not named <library>-<versions>")
    versions.get(dirName.substring(0, dash)).exists { v =>
      dirName.substring(dash + 1) match {
        case r if r.endsWith("+") => ord.gteq(v, majorMinor(r.dropRight(1)))
        case r if r.contains("-") =>
          val Array(a, b) = r.split('-')
          ord.gteq(v, majorMinor(a)) && ord.lteq(v, majorMinor(b))
        case r => v == majorMinor(r)
      }
    }
  }

  /** The variant directories under `base` that serve `versions` (see [[serves]]), in name order. */
  def variantDirs(base: File, versions: Map[String, (Int, Int)]): Seq[File] =
    Option(base.listFiles).toSeq.flatten.filter(d => d.isDirectory && serves(d.getName, versions)).sortBy(_.getName)

  /** The shim directories under `base` that serve `line`, in name order. */
  def shimDirs(base: File, line: SparkLine): Seq[File] = variantDirs(base, Map("spark" -> line.minor))

  /** Spark's own jars inside a pyspark release, extracted by dev/common.sh (for a Spark not on Central). */
  def pysparkJars(root: File, line: SparkLine): Seq[File] =
    if (line.jarsFrom != "pyspark") Nil
    else {
      val dir = new File(root, s".tools/pyspark-jars/${line.pyspark}")
      val jars = Option(dir.listFiles).toSeq.flatten.filter(_.getName.endsWith(".jar"))
      if (jars.isEmpty) sys.error(s"line ${line.id} compiles against the jars inside pyspark ${line.pyspark}, " +
        s"not found in $dir: build through dev/sbt, which extracts them")
      jars
    }
}
