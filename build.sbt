// sparkbloom build. Versions live in project/versions.properties, JVM flags in project/jvm-flags.txt.
//
// One source tree for every supported Spark line plus small shim directories, named by the Spark
// versions they serve (Delta Lake's `scala-shims` model):
//   scala-src/shims/spark-3.5      only 3.5
//   scala-src/shims/spark-4.1-4.2  4.1 and 4.2
//   scala-src/shims/spark-4.1+     4.1 and later
// The line built is chosen with -Dsparkbloom.line=<line> (a row of versions.properties; default
// `defaultLine`). Each line compiles into its own target/spark-<line>, so switching lines recompiles
// nothing; `bundle` puts the line's jar in target/bundle and target/bundles/spark-<line>.
import java.util.Properties

val versions: Properties = {
  val p = new Properties()
  val in = new java.io.FileInputStream(file("project/versions.properties"))
  try p.load(in) finally in.close()
  p
}
def v(key: String): String = versions.getProperty(key)

val sparkLine: SparkLine = SparkLines.load(versions, sys.props.getOrElse("sparkbloom.line", v("defaultLine")))

val jvmFlags: Seq[String] = IO.readLines(file("project/jvm-flags.txt"))
  .map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#"))

// Delta Lake and Iceberg (issue 12) for the lines that have a `lakehouse.<line>` row: compile-time only, and
// on the test classpath for the real Delta and Iceberg tables of the lakehouse suites. Intransitive: they
// must not bring another Spark; Delta's storage module is its one runtime dependency Spark lacks.
val lakehouse: Option[(String, String)] = Option(versions.getProperty(s"lakehouse.${sparkLine.id}"))
  .map(_.trim.split("\\s+")).collect { case Array(delta, iceberg) => (delta, iceberg) }
val lakehouseDeps: Seq[ModuleID] = lakehouse.toSeq.flatMap { case (delta, iceberg) =>
  val sparkBinary = sparkLine.spark.split('.').take(2).mkString(".")
  Seq(
    "io.delta" %% "delta-spark" % delta % Provided intransitive(),
    "io.delta" % "delta-storage" % delta % Provided intransitive(),
    "org.apache.iceberg" % s"iceberg-spark-runtime-${sparkBinary}_2.13" % iceberg % Provided intransitive())
}

ThisBuild / organization := "io.sparkbloom"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := sparkLine.scala

lazy val root = (project in file("."))
  .settings(
    name := s"sparkbloom-spark${sparkLine.id}",
    target := baseDirectory.value / "target" / s"spark-${sparkLine.id}",
    Compile / scalaSource := baseDirectory.value / "scala-src" / "main" / "scala",
    Compile / unmanagedSourceDirectories ++= SparkLines.shimDirs(baseDirectory.value / "scala-src" / "shims", sparkLine),
    Test / unmanagedSourceDirectories ++= SparkLines.shimDirs(baseDirectory.value / "tests" / "shims", sparkLine),
    // Delta and Iceberg integration: only lines whose table formats publish artifacts compile it.
    Compile / unmanagedSourceDirectories += baseDirectory.value / "scala-src" / (if (lakehouse.isDefined) "lakehouse" else "lakehouse-none"),
    Test / unmanagedSourceDirectories ++= (if (lakehouse.isDefined) Seq(baseDirectory.value / "tests" / "lakehouse") else Nil),
    // SPARKBLOOM_TEST_SOURCES=<regex> compiles only the test files whose names match (dev/matrix runs the
    // parser forwarding suite on every line without compiling every suite there).
    Test / unmanagedSources := {
      val all = (Test / unmanagedSources).value
      sys.env.get("SPARKBLOOM_TEST_SOURCES").fold(all)(re => all.filter(f => f.getName.matches(s".*(?:$re).*")))
    },
    Compile / javaSource := baseDirectory.value / "scala-src" / "main" / "java",
    Compile / resourceDirectory := baseDirectory.value / "scala-src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "tests" / "scala",
    Test / javaSource := baseDirectory.value / "tests" / "java",
    Test / resourceDirectory := baseDirectory.value / "tests" / "resources",
    Compile / unmanagedJars ++= SparkLines.pysparkJars(baseDirectory.value, sparkLine).map(Attributed.blank),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-unchecked", "-Wconf:cat=deprecation:w"),
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++= (if (sparkLine.jarsFrom == "central") Seq(
      "org.apache.spark" %% "spark-sql" % sparkLine.spark % Provided,
      "org.apache.parquet" % "parquet-hadoop" % sparkLine.parquet % Provided) else Nil) ++ Seq(
      "net.openhft" % "zero-allocation-hashing" % v("zeroAllocationHashing"),
      "org.scalatest" %% "scalatest" % v("scalatest") % Test
    ) ++ lakehouseDeps,
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
    // The line this jar is built for, checked against the running Spark when the extension loads.
    Compile / resourceGenerators += Def.task {
      val f = (Compile / resourceManaged).value / "sparkbloom" / "build.properties"
      IO.write(f, s"line=${sparkLine.id}\nspark=${sparkLine.spark}\nscalaBinary=${sparkLine.scala.split('.').take(2).mkString(".")}\n")
      Seq(f)
    }.taskValue,
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
      "org.apache.spark" %% "spark-sql" % sparkLine.spark,
      "org.apache.parquet" % "parquet-hadoop" % sparkLine.parquet
    ),
    // JMH's forks inherit these; 3 GiB holds the three 128 MiB filters built for verification.
    Jmh / javaOptions ++= jvmFlags ++ Seq("-Xmx3g"),
    Jmh / fork := true,
    run / fork := true,
    run / javaOptions ++= jvmFlags
  )

// Copies the runtime jars Spark does not provide next to sparkbloom.jar (for the Python package).
lazy val bundle = taskKey[Seq[File]]("Builds the line's sparkbloom.jar and copies it with its non-Spark dependencies to target/bundle (and target/bundles/spark-<line>)")
bundle := {
  val base = (root / baseDirectory).value / "target"
  val main = (root / Compile / packageBin).value
  val deps = (root / Compile / dependencyClasspath).value.map(_.data)
    .filter(f => f.getName.startsWith("zero-allocation-hashing"))
  Seq(base / "bundle", base / "bundles" / s"spark-${sparkLine.id}").flatMap { out =>
    IO.delete(out); IO.createDirectory(out)
    (main +: deps).map { f => val t = out / (if (f == main) "sparkbloom.jar" else f.getName); IO.copyFile(f, t); t }
  }
}
