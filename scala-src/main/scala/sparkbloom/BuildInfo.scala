package sparkbloom

import java.util.Properties

/**
 * The Spark line this jar was built for (`sparkbloom/build.properties`, written by the build from
 * project/versions.properties), and the check that the running Spark is of that line: a jar of another
 * line can fail later in confusing ways (a method Spark added and this jar does not forward, a
 * constructor that changed), so a mismatch is refused when the session loads the extension.
 */
object BuildInfo {
  private lazy val props: Properties = {
    val p = new Properties()
    val in = getClass.getResourceAsStream("/sparkbloom/build.properties")
    if (in != null) try p.load(in)
    finally in.close()
    p
  }

  /** The line id (`4.1`, `3.5_2.13`...), the Spark it was compiled against and its Scala binary version. */
  def line: String = props.getProperty("line", "unknown")
  def sparkVersion: String = props.getProperty("spark", "unknown")
  def scalaBinary: String = props.getProperty("scalaBinary", "unknown")

  private def majorMinor(v: String): String = v.split('.').take(2).mkString(".")

  /** None when `runningSpark` (on Scala `runningScala`) is this jar's line, else why not. */
  def mismatch(runningSpark: String, runningScala: String): Option[String] =
    if (majorMinor(runningSpark) == majorMinor(sparkVersion) && runningScala == scalaBinary) None
    else Some(s"this sparkbloom jar is built for Spark ${majorMinor(sparkVersion)} (Scala $scalaBinary) but the " +
      s"session runs Spark $runningSpark (Scala $runningScala): use the sparkbloom jar of that Spark line " +
      "(the Python package's sparkbloom.jar_paths() picks it)")

  /** Throws IllegalStateException when the running Spark is not this jar's line. */
  def checkRuntime(): Unit =
    mismatch(org.apache.spark.SPARK_VERSION, scala.util.Properties.versionNumberString.split('.').take(2).mkString("."))
      .foreach(m => throw new IllegalStateException(m))
}
