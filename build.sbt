// sparkbloom build. Versions live in project/versions.properties, JVM flags in project/jvm-flags.txt.
import java.util.Properties

val versions: Properties = {
  val p = new Properties()
  val in = new java.io.FileInputStream(file("project/versions.properties"))
  try p.load(in) finally in.close()
  p
}
def v(key: String): String = versions.getProperty(key)

val jvmFlags: Seq[String] = IO.readLines(file("project/jvm-flags.txt"))
  .map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#"))

ThisBuild / organization := "io.sparkbloom"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := v("scala")

lazy val root = (project in file("."))
  .settings(
    name := "sparkbloom",
    Compile / scalaSource := baseDirectory.value / "scala-src" / "main" / "scala",
    Compile / javaSource := baseDirectory.value / "scala-src" / "main" / "java",
    Compile / resourceDirectory := baseDirectory.value / "scala-src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "tests" / "scala",
    Test / javaSource := baseDirectory.value / "tests" / "java",
    Test / resourceDirectory := baseDirectory.value / "tests" / "resources",
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-unchecked", "-Wconf:cat=deprecation:w"),
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % v("spark") % Provided,
      "org.apache.parquet" % "parquet-hadoop" % v("parquet") % Provided,
      "net.openhft" % "zero-allocation-hashing" % v("zeroAllocationHashing"),
      "org.scalatest" %% "scalatest" % v("scalatest") % Test
    ),
    // Tests run against real Spark in a forked JVM with the flags Spark and the Vector API need.
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= jvmFlags ++ Seq("-Xmx6g", "-Dspark.ui.enabled=false",
      s"-Dsparkbloom.shared=${(baseDirectory.value / ".." / "shared").getCanonicalPath}"),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    Test / envVars += "SPARK_TESTING" -> "1",
    run / fork := true,
    run / javaOptions ++= jvmFlags,
    // The jar the Python package carries; dependencies Spark does not ship are copied beside it.
    Compile / packageBin / artifactPath := target.value / "sparkbloom.jar",
    Compile / doc / sources := Seq.empty
  )

// JMH benchmarks (issue 5) live in their own sub-project so the main jar stays lean.
lazy val bench = (project in file("benchmarks/jmh"))
  .dependsOn(root)
  .enablePlugins(JmhPlugin)
  .settings(
    name := "sparkbloom-bench",
    Compile / scalaSource := baseDirectory.value / "src",
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % v("spark"),
      "org.apache.parquet" % "parquet-hadoop" % v("parquet")
    ),
    // JMH's forks inherit these; 3 GiB holds the three 128 MiB filters built for verification.
    Jmh / javaOptions ++= jvmFlags ++ Seq("-Xmx3g"),
    Jmh / fork := true,
    run / fork := true,
    run / javaOptions ++= jvmFlags
  )

// Copies the runtime jars Spark does not provide next to sparkbloom.jar (for the Python package).
lazy val bundle = taskKey[Seq[File]]("Builds sparkbloom.jar and copies it with its non-Spark dependencies to target/bundle")
bundle := {
  val out = (root / target).value / "bundle"
  IO.delete(out); IO.createDirectory(out)
  val main = (root / Compile / packageBin).value
  val deps = (root / Compile / dependencyClasspath).value.map(_.data)
    .filter(f => f.getName.startsWith("zero-allocation-hashing"))
  (main +: deps).map { f => val t = out / (if (f == main) "sparkbloom.jar" else f.getName); IO.copyFile(f, t); t }
}
