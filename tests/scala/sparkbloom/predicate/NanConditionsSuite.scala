package sparkbloom.predicate

import org.apache.spark.sql.sources._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.parquet.WriterStatistics

/**
 * Which pushed-down filters can be true for a float or double NaN (in Spark NaN = NaN and NaN is above every
 * number), so that parquet-java's statistics filters must not judge a file whose writer leaves NaN out of min/max.
 */
class NanConditionsSuite extends AnyFunSuite {
  private val NaN = Double.NaN
  private def at(fs: Filter*): Set[String] = Conditions.nanSensitiveColumns(fs)

  test("comparisons that hold for NaN: >, >=, = NaN, <=> NaN, <= NaN, IN with NaN") {
    assert(at(GreaterThan("d", 1e6)) == Set("d"))
    assert(at(GreaterThanOrEqual("d", -1.0)) == Set("d"))
    assert(at(GreaterThanOrEqual("d", NaN)) == Set("d"))
    assert(at(EqualTo("d", NaN)) == Set("d"))
    assert(at(EqualNullSafe("d", NaN)) == Set("d"))
    assert(at(LessThanOrEqual("d", NaN)) == Set("d"))
    assert(at(In("d", Array(1.0, NaN))) == Set("d"))
    assert(at(GreaterThan("f", 100000.0f)) == Set("f"))
    assert(at(EqualTo("f", Float.NaN)) == Set("f"))
  }

  test("comparisons that never hold for NaN: <, <=, =, <=>, IN without NaN, > NaN") {
    for (f <- Seq(LessThan("d", 1e6), LessThanOrEqual("d", 1e6), EqualTo("d", 1.0), EqualNullSafe("d", 1.0),
        In("d", Array(1.0, 2.0)), In("d", Array(1.0, null)), GreaterThan("d", NaN), LessThan("d", NaN),
        LessThan("f", 1.0f)))
      assert(at(f).isEmpty, f)
  }

  test("under NOT the comparisons false for NaN hold: <>, NOT IN, NOT (d <= x), NOT (d < x)") {
    assert(at(Not(EqualTo("d", 1.0))) == Set("d"))
    assert(at(Not(In("d", Array(1.0, 2.0)))) == Set("d"))
    assert(at(Not(LessThanOrEqual("d", 1e6))) == Set("d"))
    assert(at(Not(LessThan("f", 1.0f))) == Set("f"))
    assert(at(Not(Not(GreaterThan("d", 1.0)))) == Set("d"))
    // ... and the ones true for NaN no longer do
    assert(at(Not(GreaterThan("d", 1.0))).isEmpty)
    assert(at(Not(EqualTo("d", NaN))).isEmpty)
    assert(at(Not(In("d", Array(1.0, NaN)))).isEmpty)
    // NOT (d IN (1.0, NULL)) is null or false, never true
    assert(at(Not(In("d", Array(1.0, null)))).isEmpty)
  }

  test("AND and OR collect the columns of every comparison, each with its own polarity") {
    assert(at(And(LessThan("d", 1.0), GreaterThan("f", 2.0f))) == Set("f"))
    assert(at(Or(LessThan("d", 1.0), GreaterThan("f", 2.0f))) == Set("f"))
    assert(at(Not(And(LessThan("d", 1.0), GreaterThan("f", 2.0f)))) == Set("d"))
    assert(at(Not(Or(EqualTo("d", 1.0), EqualTo("f", 2.0f)))) == Set("d", "f"))
    assert(at(LessThan("d", 1.0), GreaterThan("x.d", 3.0)) == Set("x.d"))
  }

  test("null checks, other types and string filters are never at risk") {
    for (f <- Seq(IsNull("d"), IsNotNull("d"), Not(IsNull("d")), GreaterThan("i", 5), Not(EqualTo("s", "a")),
        GreaterThan("dec", new java.math.BigDecimal("1.5")), Not(In("i", Array(1, 2))),
        StringStartsWith("s", "a"), Not(StringContains("s", "b")), AlwaysTrue, EqualTo("d", null)))
      assert(at(f).isEmpty, f)
  }

  test("writers that count NaN in float min/max: parquet-java from 1.10.0, as Spark and parquet-java record it") {
    for (w <- Seq("parquet-mr version 1.13.1 (build db4183109d5b734ec5930d870cdae161e408ddba)",
        "parquet-mr version 1.15.2 (build 3ce0ea1e5ba6b2ec7e1d8bd6d36f1cd13b3fd4a3)", "parquet-mr version 1.10.0",
        "parquet-java version 1.17.0 (build abc)"))
      assert(WriterStatistics.countsNaNInMinMax(w), w)
    for (w <- Seq("parquet-cpp-arrow version 21.0.0", "parquet-rs version 55.2.0", "datafusion version 49.0.0",
        "DuckDB version v1.3.2 (build 0b83e5d2f6)", "parquet-mr version 1.8.1 (build 4aba4da)",
        "parquet-mr version 1.10.0-SNAPSHOT", "impala version 4.0", "parquet-mr", "", null))
      assert(!WriterStatistics.countsNaNInMinMax(w), String.valueOf(w))
  }
}
