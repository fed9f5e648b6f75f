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
  try p.load(in)
  finally in.close()
  p
}
def v(key: String): String = versions.getProperty(key)

val sparkLine: SparkLine = SparkLines.load(versions, sys.props.getOrElse("sparkbloom.line", v("defaultLine")))

val jvmFlags: Seq[String] = IO.readLines(file("project/jvm-flags.txt"))
  .map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#"))

// Delta Lake and Iceberg, per format, for the lines whose `lakehouse.<line>` row names an artifact:
// compile-time only (Provided, intransitive: they must not bring another Spark; Delta's storage module is the
// one runtime dependency Spark lacks). The `LakehouseRuntime` configuration resolves them transitively, minus
// what Spark ships, for `lakehouseJars` (the real tables of the tests, the demo and the version smoke).
val scalaBinary: String = sparkLine.scala.split('.').take(2).mkString(".")
/** Column `i` of the line's lakehouse row as (artifact with its Scala suffix, version); None for "-" or no row. */
def lakehouseArtifact(i: Int): Option[(String, String)] =
  Option(versions.getProperty(s"lakehouse.${sparkLine.id}")).map(_.trim.split("\\s+")).map(_(i)).filter(_ != "-")
    .map(_.split(':') match { case Array(name, ver) => (s"${name}_$scalaBinary", ver) })
val deltaArtifact: Option[(String, String)] = lakehouseArtifact(0)
val icebergArtifact: Option[(String, String)] = lakehouseArtifact(1)
val LakehouseRuntime = config("lakehouse-runtime").hide
/** The major.minor versions of the libraries the line builds against, naming the variant directories it compiles. */
val libraryVersions: Map[String, (Int, Int)] = Map("spark" -> sparkLine.minor) ++
  deltaArtifact.map { case (_, ver) => "delta" -> SparkLines.majorMinor(ver.split('.').take(2).mkString(".")) } ++
  icebergArtifact.map { case (_, ver) => "iceberg" -> SparkLines.majorMinor(ver.split('.').take(2).mkString(".")) }
def lakehouseModules(conf: Configuration): Seq[ModuleID] =
  deltaArtifact.toSeq.flatMap { case (name, ver) =>
    Seq("io.delta" % name % ver % conf, "io.delta" % "delta-storage" % ver % conf)
  } ++
    icebergArtifact.toSeq.map { case (name, ver) => "org.apache.iceberg" % name % ver % conf }
val lakehouseDeps: Seq[ModuleID] =
  lakehouseModules(Provided).map(_.intransitive()) ++
    lakehouseModules(LakehouseRuntime).map(_.excludeAll(ExclusionRule("org.apache.spark"),
      ExclusionRule("org.scala-lang"),
      ExclusionRule("org.apache.hadoop"), ExclusionRule("org.scalatest"), ExclusionRule("org.scalacheck"),
      ExclusionRule("junit"), ExclusionRule("org.mockito"), ExclusionRule("com.amazonaws"), ExclusionRule("org.antlr"),
      ExclusionRule("org.roaringbitmap")))
// Hadoop's S3A connector for the object-store tests (tests/objectstore): hadoop-aws at the Hadoop of the line's
// Spark (`hadoop.<line>`), with what its POM brings that Spark does not ship (the AWS SDK bundle). Its own
// configuration, out of Compile, Test and the POM; `s3aJars` lists the jars, where coursier cached them.
val hadoopVersion: Option[String] = Option(versions.getProperty(s"hadoop.${sparkLine.id}")).map(_.trim)
val S3aRuntime = config("s3a-runtime").hide
lazy val s3aJars = taskKey[Seq[File]](
  "Resolves hadoop-aws (the line's Hadoop) and the AWS SDK bundle; lists them in target/s3a/spark-<line>/classpath.txt")
lazy val lakehouseJars = taskKey[Seq[File]](
  "Copies the line's Delta Lake and Iceberg runtime jars (Maven Central, through sbt's cache) to " +
    "target/lakehouse/spark-<line>")

// Maven coordinates: io.github.sparkbloom:sparkbloom-spark-<Spark major.minor>_<Scala binary>:<version>, one
// artifact per line (crossPaths adds the Scala suffix), published by `root/publish` into the Maven-layout
// repository dist/maven (dev/release, dev/matrix).
ThisBuild / organization := "io.github.sparkbloom"
ThisBuild / versionScheme := Some("early-semver")
ThisBuild / version := v("version")
ThisBuild / scalaVersion := sparkLine.scala

lazy val root = (project in file("."))
  .settings(
    name := s"sparkbloom-spark-${sparkLine.minor._1}.${sparkLine.minor._2}",
    moduleName := name.value, // the artifactId as is (sbt's default would turn its dots into dashes)
    description := "Parquet bloom-filter indexes and data skipping for Apache Spark",
    licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
    publishTo := Some(MavenCache("dist", (ThisBuild / baseDirectory).value / "dist" / "maven")),
    publishConfiguration := publishConfiguration.value.withOverwrite(true),
    // The jar, its sources (every variant directory of the line included) and the POM; no javadoc.
    Compile / packageDoc / publishArtifact := false,
    // The sources jar holds the variant directories' files (flat, e.g. scala-src/shims/spark-3.5/ParserShims.scala)
    // under their packages' paths, as IDEs and debuggers look sources up.
    Compile / packageSrc / mappings := {
      val variants = Seq("shims", "formats").flatMap(d =>
        SparkLines.variantDirs(baseDirectory.value / "scala-src" / d, libraryVersions)).toSet
      (Compile / packageSrc / mappings).value.map { case (f, path) =>
        val pkg = if (variants(f.getParentFile)) IO.readLines(f).map(_.trim).find(_.startsWith("package ")) else None
        f -> pkg.fold(path)(p => p.stripPrefix("package ").trim.replace('.', '/') + "/" + f.getName)
      }
    },
    // The POM names what a user's build needs: zero-allocation-hashing (and Scala) at compile scope, Spark as
    // provided. Dependencies of sbt-only configurations (Test, LakehouseRuntime) stay out of it.
    makePomConfiguration := makePomConfiguration.value.withConfigurations(Vector(Compile, Provided)),
    // A line compiling against the jars inside pyspark (not on Central) resolves no Spark module: its POM names
    // Spark all the same, provided.
    pomPostProcess := { (pom: scala.xml.Node) =>
      if (sparkLine.jarsFrom == "central") pom
      else {
        val spark =
          <dependency>
            <groupId>org.apache.spark</groupId>
            <artifactId>spark-sql_{scalaBinary}</artifactId>
            <version>{sparkLine.spark}</version>
            <scope>provided</scope>
          </dependency>
        new scala.xml.transform.RuleTransformer(new scala.xml.transform.RewriteRule {
          override def transform(n: scala.xml.Node): Seq[scala.xml.Node] = n match {
            case e: scala.xml.Elem if e.label == "dependencies" => e.copy(child = e.child :+ spark)
            case other => other
          }
        }).transform(pom).head
      }
    },
    target := baseDirectory.value / "target" / s"spark-${sparkLine.id}",
    Compile / scalaSource := baseDirectory.value / "scala-src" / "main" / "scala",
    Compile / unmanagedSourceDirectories ++=
      SparkLines.variantDirs(baseDirectory.value / "scala-src" / "shims", libraryVersions),
    // Table formats (Delta Lake, Iceberg): variant directories chosen by the same rule as the Spark shims, by the
    // versions of the libraries the line has (a format the line has no build of compiles nothing at all).
    Compile / unmanagedSourceDirectories ++=
      SparkLines.variantDirs(baseDirectory.value / "scala-src" / "formats", libraryVersions),
    // The suites' own shims (tests/shims/spark-<versions>: what the suites do differently per Spark line, e.g.
    // collations, error conditions) and the table formats' suites (real Delta and Iceberg tables), chosen like the
    // sources by the line's library versions.
    Test / unmanagedSourceDirectories ++=
      SparkLines.variantDirs(baseDirectory.value / "tests" / "shims", libraryVersions) ++
        SparkLines.variantDirs(baseDirectory.value / "tests" / "formats", libraryVersions),
    ivyConfigurations ++= Seq(LakehouseRuntime, S3aRuntime),
    libraryDependencies ++= hadoopVersion.toSeq.map(h => "org.apache.hadoop" % "hadoop-aws" % h % S3aRuntime),
    s3aJars := {
      val h = hadoopVersion.getOrElse(sys.error(s"project/versions.properties has no hadoop.${sparkLine.id}"))
      // The line's Spark must ship this Hadoop: S3A is not compatible across Hadoop versions.
      val shipped =
        ((Compile / dependencyClasspath).value.flatMap(_.get(moduleID.key))
          .filter(_.name == "hadoop-client-api").map(_.revision) ++
          (Compile / unmanagedJars).value.map(_.data.getName).collect {
            case n if n.startsWith("hadoop-client-api-") => n.stripPrefix("hadoop-client-api-").stripSuffix(".jar")
          }).distinct
      if (shipped != Seq(h)) sys.error(s"hadoop.${sparkLine.id}=$h, but Spark ${sparkLine.spark} ships Hadoop $shipped")
      val spark = (Compile / dependencyClasspath).value.flatMap(_.get(moduleID.key)).map(m => (m.organization, m.name))
        .toSet
      val jars = Classpaths.managedJars(S3aRuntime, Set("jar"), update.value).filterNot(a =>
        a.get(moduleID.key).exists(m =>
          spark((m.organization, m.name)) ||
            m.organization == "org.apache.hadoop" &&
            m.name != "hadoop-aws")).map(_.data)
      val out = target.value.getParentFile / "s3a" / s"spark-${sparkLine.id}" / "classpath.txt"
      IO.write(out, jars.map(_.getAbsolutePath).mkString("", "\n", "\n"))
      jars
    },
    // The lakehouse suites read real tables with the formats' runtime dependencies too (Delta 4.4's kernel).
    Test / unmanagedJars ++= lakehouseJars.value.map(Attributed.blank),
    lakehouseJars := {
      val out = target.value.getParentFile / "lakehouse" / s"spark-${sparkLine.id}"
      // What Spark itself ships (its own modules, parquet-java, log4j, ...) stays Spark's: left out by module.
      val own = lakehouseModules(LakehouseRuntime).map(m => (m.organization, m.name)).toSet
      val spark = (Compile / dependencyClasspath).value.flatMap(_.get(moduleID.key)).map(m =>
        (m.organization, m.name)).toSet -- own
      val jars = Classpaths.managedJars(LakehouseRuntime, Set("jar"), update.value)
        .filterNot(a => a.get(moduleID.key).exists(m => spark((m.organization, m.name)))).map(_.data)
      IO.delete(out); IO.createDirectory(out)
      jars.map { f =>
        val t = out / f.getName; IO.copyFile(f, t); t
      }
    },
    // SPARKBLOOM_TEST_SOURCES=<regex> compiles only the test files whose names match (dev/matrix runs the
    // forwarding suites on most lines without compiling every suite there). The system property
    // sparkbloom.testSources, set per line in one sbt session (dev/common.sh build_lines), overrides it; empty: all.
    Test / unmanagedSources := {
      val all = (Test / unmanagedSources).value
      val only = sys.props.get("sparkbloom.testSources") match {
        case Some(re) => Some(re).filter(_.nonEmpty)
        case None => sys.env.get("SPARKBLOOM_TEST_SOURCES")
      }
      only.fold(all)(re => all.filter(f => f.getName.matches(s".*(?:$re).*")))
    },
    Compile / resourceDirectory := baseDirectory.value / "scala-src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "tests" / "scala",
    Test / resourceDirectory := baseDirectory.value / "tests" / "resources",
    Compile / unmanagedJars ++= SparkLines.pysparkJars(baseDirectory.value, sparkLine).map(Attributed.blank),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-unchecked", "-Wconf:cat=deprecation:w"),
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++=
      (if (sparkLine.jarsFrom == "central") Seq(
         "org.apache.spark" %% "spark-sql" % sparkLine.spark % Provided,
         "org.apache.parquet" % "parquet-hadoop" % sparkLine.parquet % Provided)
       else Nil) ++ Seq(
        "net.openhft" % "zero-allocation-hashing" % v("zeroAllocationHashing"),
        "org.scalatest" %% "scalatest" % v("scalatest") % Test
      ) ++ lakehouseDeps,
    // Tests run against real Spark in a forked JVM with the flags Spark and the Vector API need.
    Test / fork := true,
    // The suites run in SPARKBLOOM_TEST_JVMS forked JVMs at once (default 2; sbt runs the groups below in parallel
    // when parallelExecution is on), each suite in one of them, spread longest first by the seconds its tests took in
    // a clean-clone CI run on the 2-core machine (the default line, two JVMs at once, 2026-11-29; a suite not listed
    // counts 3 s). Spread by the weights of 2026-11-27, that run's suites give the two JVMs 1,075 s against 961 s;
    // by these, 1,018 s against 1,019 s (computed from its log). Inside a JVM the suites run one after another
    // (testForkedParallel off), each in its own session. Measured (2026-11-27): 880 s for every suite in one JVM,
    // 702 s in two (each suite ~1.5x slower, two at a time).
    Test / parallelExecution := true,
    Test / testForkedParallel := false,
    Test / testGrouping := {
      val opts = (Test / forkOptions).value
      val tests = (Test / definedTests).value
      val jvms = math.max(1, sys.env.get("SPARKBLOOM_TEST_JVMS").map(_.toInt).getOrElse(2))
      val seconds = Map("DeltaWritesAndJoinsSuite" -> 389, "IcebergWritesAndJoinsSuite" -> 337,
        "DeltaDmlFuzzSuite" -> 258, "DeltaSuite" -> 180, "IndexMaintenanceSuite" -> 113, "IcebergDmlFuzzSuite" -> 90,
        "CorruptionSuite" -> 82, "KeySetFuzzSuite" -> 81, "DifferentialFuzzSuite" -> 79, "ConcurrencySuite" -> 74,
        "StaleDataSuite" -> 67, "IcebergSuite" -> 55, "MaintainOnWriteSuite" -> 44, "KeySetPruningSuite" -> 31,
        "NativeFiltersSuite" -> 26, "V2ScanSuite" -> 21, "FppBudgetSuite" -> 19, "ScanMetricsSuite" -> 12,
        "SkippingSuite" -> 11, "SlicedIndexSuite" -> 11, "SbbfAggFunctionSuite" -> 9, "BuildFastPathSuite" -> 8,
        "TailReadSuite" -> 8, "CatalogTableSuite" -> 6)
      def weight(name: String): Int = seconds.getOrElse(name.split('.').last, 3)
      val groups = Array.fill(jvms)(Vector.empty[TestDefinition])
      for (t <- tests.sortBy(t => (-weight(t.name), t.name))) {
        val lightest = groups.indices.minBy(i => groups(i).map(d => weight(d.name)).sum)
        groups(lightest) = groups(lightest) :+ t
      }
      groups.toSeq.zipWithIndex.filter(_._1.nonEmpty).map { case (ts, i) =>
        Tests.Group(s"jvm-${i + 1}", ts, Tests.SubProcess(opts))
      }
    },
    // The parallel collector: the suites are throughput work on a CPU-bound 2-core machine, and G1's concurrent
    // work costs CPU the other JVM needs. Measured alone on one JVM (2026-11-29, `time` around sbt): Delta's
    // writes-and-joins suite 373 s of user CPU and 218 s against G1's 429 s and 231 s; the index maintenance and
    // corruption suites 262 s against 279 s and 304 s (two G1 runs). The product sets no collector: this is the tests'.
    Test / javaOptions ++= jvmFlags ++ Seq("-Xmx6g", "-XX:+UseParallelGC", "-Dspark.ui.enabled=false",
      s"-Dsparkbloom.shared=${(baseDirectory.value / ".." / "shared").getCanonicalPath}") ++
      // The JVM ignores TMPDIR: the scratch directory dev/test chose (dev/common.sh use_ram_scratch) is passed on.
      sys.env.get("TMPDIR").filter(_.nonEmpty).map(dir => s"-Djava.io.tmpdir=$dir") ++
      // Extra flags for the forked test JVMs (profiling, JIT and GC experiments), space-separated.
      sys.env.get("SPARKBLOOM_TEST_JAVA_OPTS").toSeq.flatMap(_.split(' ').filter(_.nonEmpty)),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    Test / envVars += "SPARK_TESTING" -> "1",
    run / fork := true,
    run / javaOptions ++= jvmFlags,
    // The jar the Python package carries; dependencies Spark does not ship are copied beside it.
    Compile / packageBin / artifactPath := target.value / "sparkbloom.jar",
    // The line this jar is built for, checked against the running Spark when the extension loads.
    Compile / resourceGenerators += Def.task {
      val f = (Compile / resourceManaged).value / "sparkbloom" / "build.properties"
      IO.write(f, s"line=${sparkLine.id}\nspark=${sparkLine.spark}\nscalaBinary=$scalaBinary\n")
      Seq(f)
    }.taskValue,
    Compile / doc / sources := Seq.empty
  )

// JMH benchmarks live in their own sub-project so the main jar stays lean.
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

// Test and benchmark harnesses, kept out of the product jar: DecisionFuzz (tests/python/test_foreign_fuzz.py,
// benchmarks/long_fuzz.py) and ScaleBench (benchmarks/scale.py), called from Python with
// target/harness/spark-<line>/sparkbloom-harness.jar on spark.jars (`harness/package`), and the timing
// programs BuildSpeed and QuickCheckSpeed (`harness/runMain ...`). Built per line like the main jar.
lazy val harness = (project in file("benchmarks/harness"))
  .dependsOn(root)
  .settings(
    name := "sparkbloom-harness",
    target := (root / baseDirectory).value / "target" / "harness" / s"spark-${sparkLine.id}",
    Compile / scalaSource := baseDirectory.value / "src",
    scalacOptions := (root / scalacOptions).value,
    // Spark's own modules may bring a newer scala-library than the line's Scala (SIP-51 refuses that): the
    // line's, as Spark ships it.
    dependencyOverrides += "org.scala-lang" % "scala-library" % sparkLine.scala,
    libraryDependencies ++=
      (if (sparkLine.jarsFrom == "central") Seq(
         "org.apache.spark" %% "spark-sql" % sparkLine.spark,
         "org.apache.parquet" % "parquet-hadoop" % sparkLine.parquet)
       else Nil),
    Compile / unmanagedJars ++= SparkLines.pysparkJars((root / baseDirectory).value, sparkLine).map(Attributed.blank),
    Compile / packageBin / artifactPath := target.value / "sparkbloom-harness.jar",
    Compile / packageBin / mainClass := None, // several mains, none the jar's: run with harness/runMain <class>
    Compile / doc / sources := Seq.empty,
    run / fork := true,
    // The tests' log4j2.properties (warnings only), as these programs had when they ran with Test/runMain.
    run / javaOptions ++= jvmFlags :+
      s"-Dlog4j2.configurationFile=${(root / baseDirectory).value / "tests" / "resources" / "log4j2.properties"}"
  )

// Copies the runtime jars Spark does not provide next to sparkbloom.jar (for the Python package).
lazy val bundle = taskKey[Seq[File]](
  "Builds the line's sparkbloom.jar and copies it with its non-Spark dependencies to target/bundle (and " +
    "target/bundles/spark-<line>)")
bundle := {
  val base = (root / baseDirectory).value / "target"
  val main = (root / Compile / packageBin).value
  val deps = (root / Compile / dependencyClasspath).value.map(_.data)
    .filter(f => f.getName.startsWith("zero-allocation-hashing"))
  Seq(base / "bundle", base / "bundles" / s"spark-${sparkLine.id}").flatMap { out =>
    IO.delete(out); IO.createDirectory(out)
    (main +: deps).map { f =>
      val t = out / (if (f == main) "sparkbloom.jar" else f.getName); IO.copyFile(f, t); t
    }
  }
}

// The forked test JVMs that may run at once (Test / testGrouping above).
// (sbt's defaults, with its limit of one forked test JVM at a time raised.)
Global / concurrentRestrictions := Seq(
  Tags.limitAll(math.max(2, java.lang.Runtime.getRuntime.availableProcessors())),
  Tags.limit(Tags.ForkedTestGroup, math.max(1, sys.env.get("SPARKBLOOM_TEST_JVMS").map(_.toInt).getOrElse(2))),
  Tags.exclusiveGroup(Tags.Clean))
