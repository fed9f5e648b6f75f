package sparkbloom.functions

import sparkbloom.testing.SparkSessionSuite

/** The extension registers the four functions with their documentation, and the documented examples hold. */
class FunctionRegistrationSuite extends SparkSessionSuite {
  private val names = Seq("sbbf_agg", "sbbf_hash", "sbbf_might_contain", "sbbf_num_bytes")

  test("SHOW FUNCTIONS lists the four sbbf_* functions") {
    val listed = sql("SHOW FUNCTIONS LIKE 'sbbf*'").collect().map(_.getString(0)).toSet
    assert(names.forall(listed.contains), listed)
  }

  test("DESCRIBE FUNCTION EXTENDED shows the class, usage, arguments and examples") {
    for (n <- names) {
      val text = sql(s"DESCRIBE FUNCTION EXTENDED $n").collect().map(_.getString(0)).mkString("\n")
      assert(text.contains(s"Function: $n"), text)
      assert(text.contains("sparkbloom.functions."), text)
      assert(text.contains("Arguments:") && text.contains("Examples:"), text)
      assert(!text.contains("_FUNC_"), text)
    }
  }

  test("every documented example returns the documented result") {
    for ((id, info, _) <- BloomFunctions.all) {
      val lines = info.getExamples.split("\n").map(_.trim).filter(_.nonEmpty).dropWhile(_ != "Examples:").drop(1)
      assert(lines.nonEmpty, id)
      lines.grouped(2).foreach { case Array(query, expected) =>
        val row = sql(query.stripPrefix("> ").stripSuffix(";")).head()
        assert(row.toSeq.map(String.valueOf).mkString("\t") == expected, query)
      }
    }
  }

  test("a new session of the same SparkSession keeps the functions") {
    val other = spark.newSession()
    assert(other.sql("SHOW FUNCTIONS LIKE 'sbbf*'").count() == 4)
    assert(other.sql("SELECT sbbf_num_bytes(10000, 0.01)").head().getInt(0) == 16384)
  }
}
