package sparkbloom.functions

import sparkbloom.TestSupport.{fixtureBytes, toHex}
import sparkbloom.sbbf.ParquetBloomFilter
import sparkbloom.testing.SparkSessionSuite
import sparkbloom.testing.TestShims.assumeCollations

/** sbbf_might_contain through SQL, with bitsets from sbbf_agg, from literals and from other writers. */
class SbbfMightContainFunctionSuite extends SparkSessionSuite {

  private def answer(query: String): Any = sql(query).head().get(0)

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    sql("SELECT id * 3 AS v, concat('k', id) AS s FROM range(2000)").createOrReplaceTempView("facts")
    sql("SELECT sbbf_agg(v, 4096) AS bv, sbbf_agg(s, 4096) AS bs FROM facts").createOrReplaceTempView("filters")
  }

  test("every inserted value is found") {
    val missed =
      sql("SELECT count(*) FROM facts, filters WHERE NOT sbbf_might_contain(bv, v) OR NOT sbbf_might_contain(bs, s)")
    assert(missed.head().getLong(0) == 0)
  }

  test("absent values are almost always ruled out") {
    val found =
      sql("SELECT count_if(sbbf_might_contain(bv, id * 3 + 1)), count_if(sbbf_might_contain(bs, concat('x', id))) " +
        "FROM range(5000), filters").head()
    // 2000 values in 128 blocks: the estimate is about 0.25%; 5000 probes should let through well under 2%.
    assert(found.getLong(0) < 100 && found.getLong(1) < 100, found)
  }

  test("a bitset from a scalar subquery can filter another table") {
    val kept =
      sql("SELECT count(*) FROM range(6000) WHERE sbbf_might_contain((SELECT sbbf_agg(v, 4096) FROM facts), id)")
    val n = kept.head().getLong(0)
    assert(n >= 2000 && n < 2100, s"$n rows kept")
  }

  test("NULL value or NULL bitset gives NULL") {
    assert(answer("SELECT sbbf_might_contain(bv, CAST(NULL AS BIGINT)) FROM filters") == null)
    assert(answer("SELECT sbbf_might_contain(CAST(NULL AS BINARY), 1L)") == null)
    assert(answer("SELECT sbbf_might_contain(bv, NULL) FROM filters") == null)
  }

  test("a probe for either floating zero finds a filter holding the other one") {
    sql("SELECT sbbf_agg(d, 64) AS neg, sbbf_agg(-d, 64) AS pos FROM VALUES (CAST('-0.0' AS DOUBLE)) AS t(d)")
      .createOrReplaceTempView("zeros")
    assert(answer("SELECT sbbf_might_contain(neg, 0.0D) FROM zeros") == true)
    assert(answer("SELECT sbbf_might_contain(neg, CAST('-0.0' AS DOUBLE)) FROM zeros") == true)
    assert(answer("SELECT sbbf_might_contain(pos, CAST('-0.0' AS DOUBLE)) FROM zeros") == true)
    assert(answer("SELECT sbbf_might_contain(neg, 1.0D) FROM zeros") == false)
  }

  test("NaN is never ruled out, even by an empty filter") {
    assert(
      answer("SELECT sbbf_might_contain(sbbf_agg(d, 32), CAST('NaN' AS DOUBLE)) FROM VALUES (1.0D) AS t(d)") == true)
    assert(answer(s"SELECT sbbf_might_contain(X'${"00" * 32}', CAST('NaN' AS FLOAT))") == true)
    assert(answer(s"SELECT sbbf_might_contain(X'${"00" * 32}', CAST(1 AS FLOAT))") == false)
  }

  test("a bitset written by parquet-mr, as a literal, answers for its 14 strings") {
    val f = ParquetBloomFilter.deserialize(fixtureBytes("parquet-testing/bloom_filter.xxhash.bin"))
    val lit = s"X'${toHex(f.toBytes)}'"
    for (v <- Seq("hello", "parquet", "bloom", "filter"))
      assert(answer(s"SELECT sbbf_might_contain($lit, '$v')") == true, v)
    for (v <- Seq("Hello", "world", "not_exists")) assert(answer(s"SELECT sbbf_might_contain($lit, '$v')") == false, v)
  }

  test("strings under a collation that is not byte equality are never ruled out") {
    assumeCollations()
    assert(answer(s"SELECT sbbf_might_contain(X'${"00" * 32}', 'a' COLLATE UTF8_LCASE)") == true)
    assert(answer(s"SELECT sbbf_might_contain(X'${"00" * 32}', 'a')") == false)
  }

  test("a bitset of the wrong length from a column fails at run time with a clear message") {
    val e = intercept[Exception](sql("SELECT sbbf_might_contain(b, 1) FROM VALUES (X'0011') AS t(b)").collect())
    assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(
        _.getMessage.contains("not an SBBF bitset")), e)
  }
}
