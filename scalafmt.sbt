// scalafmt (sbt-scalafmt, .scalafmt.conf; dev/lint-scala) covers every Scala source under scala-src/ and tests/,
// whichever Spark line is built: a line compiles only its own shim and format directories (build.sbt), so the
// formatter takes the directories whole instead; and the spark-shell script examples/Quickstart.scala.
// benchmarks/jmh and benchmarks/harness are their projects' own; project/ and the *.sbt files are scalafmtSbt's.
Compile / scalafmt / unmanagedSources :=
  ((baseDirectory.value / "scala-src") ** "*.scala").get ++ (baseDirectory.value / "examples" * "*.scala").get
Test / scalafmt / unmanagedSources := ((baseDirectory.value / "tests") ** "*.scala").get
