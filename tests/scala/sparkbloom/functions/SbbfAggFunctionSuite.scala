package sparkbloom.functions

import sparkbloom.testing.SparkSessionSuite
import sparkbloom.{AllTypesData, SparkWrittenFilters}
import sparkbloom.hash.PlainHash
import sparkbloom.sbbf.Sbbf

/** sbbf_agg through SQL: byte-identical to parquet-java's filters, and independent of partitioning. */
class SbbfAggFunctionSuite extends SparkSessionSuite {

  private def bytesOf(query: String): Array[Byte] = sql(query).head().getAs[Array[Byte]](0)

  test("sbbf_agg over each column gives the bytes of the filter parquet-java writes for the same values and size") {
    withTempDir { dir =>
      val df = AllTypesData.frame(spark, 3000)
      val written = SparkWrittenFilters.write(df, dir, AllTypesData.columns, 8192)
      df.createOrReplaceTempView("all_types")
      for (c <- AllTypesData.columns)
        assert(java.util.Arrays.equals(bytesOf(s"SELECT sbbf_agg($c, 8192) FROM all_types"), written(c).filter.toBytes),
          c)
    }
  }

  test("sbbf_agg matches a filter parquet-java sized from an NDV (read back at the file's size)") {
    withTempDir { dir =>
      val df = sql("SELECT id * 31 AS v, concat('k', id) AS k FROM range(5000)")
      val written = SparkWrittenFilters.write(df, dir, Seq("v", "k"), 1 << 20,
        options = Map(
          "parquet.bloom.filter.expected.ndv#v" -> "5000", "parquet.bloom.filter.fpp#v" -> "0.01",
          "parquet.bloom.filter.expected.ndv#k" -> "5000", "parquet.bloom.filter.fpp#k" -> "0.001"))
      df.createOrReplaceTempView("ndv_sized")
      for (c <- Seq("v", "k")) {
        val size = written(c).filter.numBytes
        assert(size < (1 << 20), s"$c was sized from its NDV")
        assert(java.util.Arrays.equals(bytesOf(s"SELECT sbbf_agg($c, $size) FROM ndv_sized"),
          written(c).filter.toBytes), c)
      }
    }
  }

  test("the result is the same with one partition and with many") {
    val base = sql("SELECT id * 7919 AS v, concat('s', id % 977) AS s FROM range(20000)")
    base.repartition(1).createOrReplaceTempView("one_part")
    base.repartition(16).createOrReplaceTempView("many_parts")
    assert(sql("SELECT * FROM many_parts").rdd.getNumPartitions == 16)
    for (c <- Seq("v", "s")) {
      val one = bytesOf(s"SELECT sbbf_agg($c, 4096) FROM one_part")
      val many = bytesOf(s"SELECT sbbf_agg($c, 4096) FROM many_parts")
      assert(java.util.Arrays.equals(one, many), c)
      val expected = Sbbf.empty(4096)
      sql(s"SELECT $c FROM one_part").collect().foreach { r =>
        expected.insert(
          if (c == "v") PlainHash.int64(r.getLong(0)) else PlainHash.bytes(r.getString(0).getBytes("UTF-8")))
      }
      assert(java.util.Arrays.equals(one, expected.toBytes), s"$c equals the filter built locally")
    }
  }

  test("the aggregate runs distributed: partial filters per partition, merged after a shuffle") {
    sql("SELECT id AS v FROM range(1000)").repartition(8).createOrReplaceTempView("spread")
    val df = sql("SELECT sbbf_agg(v, 1024) FROM spread")
    df.collect()
    val plan = df.queryExecution.executedPlan.toString
    assert("ObjectHashAggregate|SortAggregate".r.findAllIn(plan).size >= 2, plan)
    assert(plan.contains("partial_sbbf_agg"), plan)
  }

  test("grouped aggregation gives each group the filter of its own values") {
    sql("SELECT id % 3 AS g, id AS v FROM range(3000)").repartition(5).createOrReplaceTempView("grouped")
    val byGroup = sql("SELECT g, sbbf_agg(v, 512) FROM grouped GROUP BY g").collect()
      .map(r => r.getLong(0) -> r.getAs[Array[Byte]](1)).toMap
    assert(byGroup.keySet == Set(0L, 1L, 2L))
    for ((g, bytes) <- byGroup) {
      val expected = Sbbf.empty(512)
      (0L until 3000L).filter(_ % 3 == g).foreach(v => expected.insert(PlainHash.int64(v)))
      assert(java.util.Arrays.equals(bytes, expected.toBytes), s"group $g")
    }
  }

  test("NULLs are skipped; no rows or only NULLs give an all-zero bitset of num_bytes") {
    val withNulls = bytesOf("SELECT sbbf_agg(v, 64) FROM VALUES (1), (NULL), (2) AS t(v)")
    val without = bytesOf("SELECT sbbf_agg(v, 64) FROM VALUES (1), (2) AS t(v)")
    assert(java.util.Arrays.equals(withNulls, without))
    val empty = bytesOf("SELECT sbbf_agg(id, 96) FROM range(0)")
    assert(empty.length == 96 && empty.forall(_ == 0))
    val nulls = bytesOf("SELECT sbbf_agg(CAST(v AS STRING), 32) FROM VALUES (NULL), (NULL) AS t(v)")
    assert(nulls.length == 32 && nulls.forall(_ == 0))
  }

  test("num_bytes may be any constant integral expression, including sbbf_num_bytes") {
    val sized = bytesOf("SELECT sbbf_agg(id, sbbf_num_bytes(1000, 0.01)) FROM range(1000)")
    assert(sized.length == 2048)
    assert(bytesOf("SELECT sbbf_agg(id, 1024L) FROM range(10)").length == 1024)
    assert(bytesOf("SELECT sbbf_agg(id, 32 * 3) FROM range(10)").length == 96, "non-power-of-two block counts are fine")
  }

  test("a 16 MiB filter survives the partial/final serialisation") {
    sql("SELECT id AS v FROM range(100000)").repartition(4).createOrReplaceTempView("big")
    val bytes = bytesOf(s"SELECT sbbf_agg(v, ${16 << 20}) FROM big")
    assert(bytes.length == (16 << 20))
    val f = Sbbf.fromBytes(bytes)
    assert((0L until 100000L by 997).forall(v => f.mightContain(PlainHash.int64(v))))
    assert(f.cardinalityOfBits > 700000 && f.cardinalityOfBits <= 800000)
  }

  test("floating zeros are inserted as written and NaN as its bits") {
    val f = Sbbf.fromBytes(
      bytesOf("SELECT sbbf_agg(d, 32) FROM VALUES (CAST('-0.0' AS DOUBLE)), (CAST('NaN' AS DOUBLE)) AS t(d)"))
    assert(f.mightContain(PlainHash.double(-0.0)))
    assert(!f.mightContain(PlainHash.double(0.0)))
    assert(f.mightContain(PlainHash.double(Double.NaN)))
    assert(f.cardinalityOfBits <= 16)
  }
}
