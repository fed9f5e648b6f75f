package sparkbloom.functions

import org.apache.spark.sql.AnalysisException

import sparkbloom.testing.SparkSessionSuite
import sparkbloom.testing.TestShims.errorCondition

/** Wrong arguments to the sbbf_* functions fail analysis, before any job runs, with a message that says why. */
class FunctionArgumentsSuite extends SparkSessionSuite {

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    sql("SELECT id AS v, id % 2 = 0 AS flag, array(id) AS arr, map(id, id) AS m, named_struct('a', id) AS st, " +
      "CAST(id AS STRING) AS s, 0.01D AS p FROM range(10)").createOrReplaceTempView("t")
  }

  private def analysisError(query: String): AnalysisException = {
    val jobsBefore = spark.sparkContext.statusTracker.getJobIdsForGroup(null).length
    val e = intercept[AnalysisException](sql(query))
    assert(spark.sparkContext.statusTracker.getJobIdsForGroup(null).length == jobsBefore, "no job ran")
    e
  }

  private def expect(query: String, condition: String, fragments: String*): Unit = {
    val e = analysisError(query)
    assert(errorCondition(e) == condition, s"$query: ${e.getMessage}")
    fragments.foreach(f => assert(e.getMessage.contains(f), s"$query: '$f' not in ${e.getMessage}"))
  }

  test("sbbf_agg: num_bytes must be a positive multiple of 32 no larger than 128 MiB") {
    for (n <- Seq("33", "0", "-32", "100", "134217760", "9999999999"))
      expect(s"SELECT sbbf_agg(v, $n) FROM t", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT", "multiple of 32",
        "128 MiB")
    expect("SELECT sbbf_agg(v, CAST(NULL AS INT)) FROM t", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
      "must not be NULL")
  }

  test("sbbf_agg: num_bytes must be a constant integer") {
    expect("SELECT sbbf_agg(v, CAST(v * 32 AS INT)) FROM t", "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT", "num_bytes")
    expect("SELECT sbbf_agg(v, '64') FROM t", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "second", "INT")
    expect("SELECT sbbf_agg(v, 64.0) FROM t", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "second")
  }

  test("sbbf_agg, sbbf_hash and sbbf_might_contain refuse BOOLEAN and nested types") {
    for (c <- Seq("flag", "arr", "m", "st")) {
      expect(s"SELECT sbbf_agg($c, 64) FROM t", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "first", "\"STRING\"")
      expect(s"SELECT sbbf_hash($c) FROM t", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "first")
      expect(s"SELECT sbbf_might_contain(X'${"00" * 32}', $c) FROM t", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE",
        "second")
    }
    expect("SELECT sbbf_hash(true)", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "\"BOOLEAN\"")
  }

  test("sbbf_num_bytes: fpp must be a constant in (0, 1) and a constant ndv must not be negative") {
    for (f <- Seq("0", "1", "1.5", "-0.1", "0.0D", "CAST('NaN' AS DOUBLE)"))
      expect(s"SELECT sbbf_num_bytes(100, $f)", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
        "fpp must be in (0, 1)")
    expect("SELECT sbbf_num_bytes(v, p) FROM t", "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT", "fpp")
    expect("SELECT sbbf_num_bytes(-1, 0.01)", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
      "ndv must not be negative")
    // Constants that fail to evaluate: casts and overflows fail under ANSI mode (the default from Spark 4.0; Spark
    // 3.5's default casts 'many' to NULL and wraps the overflow), set here on every line.
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      expect("SELECT sbbf_num_bytes('many', 0.01)", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
        "ndv cannot be evaluated")
      expect("SELECT sbbf_num_bytes(10, 'low')", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
        "fpp cannot be evaluated")
      expect("SELECT sbbf_agg(v, 2147483647 + 1) FROM t", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
        "num_bytes cannot be evaluated")
    }
  }

  test("sbbf_might_contain: the bitset must be BINARY, and a constant one a multiple of 32 bytes") {
    expect("SELECT sbbf_might_contain('abc', 1)", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "first", "BINARY")
    expect("SELECT sbbf_might_contain(X'0011', 1)", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT", "multiple of 32",
      "got 2")
    expect("SELECT sbbf_might_contain(X'', 1)", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT", "got 0")
  }

  test("a wrong number of arguments is reported with the function's name") {
    expect("SELECT sbbf_agg(v) FROM t", "WRONG_NUM_ARGS.WITHOUT_SUGGESTION", "`sbbf_agg`", "2")
    expect("SELECT sbbf_hash(v, v) FROM t", "WRONG_NUM_ARGS.WITHOUT_SUGGESTION", "`sbbf_hash`")
    expect("SELECT sbbf_num_bytes(1)", "WRONG_NUM_ARGS.WITHOUT_SUGGESTION", "`sbbf_num_bytes`")
    expect("SELECT sbbf_might_contain(X'00')", "WRONG_NUM_ARGS.WITHOUT_SUGGESTION", "`sbbf_might_contain`")
  }
}
