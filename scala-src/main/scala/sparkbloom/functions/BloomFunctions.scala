package sparkbloom.functions

import org.apache.spark.sql.{AnalysisException, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}

/**
 * The sbbf_* SQL functions, as [[SparkSessionExtensions]] function descriptions:
 *
 * | function                         | returns  | what                                                   |
 * |----------------------------------|----------|--------------------------------------------------------|
 * | `sbbf_hash(expr)`                | BIGINT   | xxHash64 of the value's Parquet plain encoding          |
 * | `sbbf_num_bytes(ndv, fpp)`       | INT      | bitset size for ndv values at fpp                      |
 * | `sbbf_agg(expr, num_bytes)`      | BINARY   | aggregate: raw bitset holding every non-null value     |
 * | `sbbf_might_contain(bits, expr)` | BOOLEAN  | false only if the value is certainly not in the bitset |
 */
object BloomFunctions {

  val all: Seq[SparkSessionExtensions#FunctionDescription] = Seq(
    describe("sbbf_hash", classOf[SbbfHash], "hash_funcs",
      usage = "_FUNC_(expr) - Returns the xxHash64 (seed 0, signed) of expr's Parquet PLAIN encoding in the " +
        "physical type Spark writes for its type: the hash a Parquet bloom filter holds for the value.",
      arguments = Seq("expr" -> "a value of a type Parquet bloom filters support (not BOOLEAN or nested types)"),
      examples = Seq("SELECT _FUNC_(42);" -> "-2929917330072466447",
        "SELECT _FUNC_('hello');" -> "2794345569481354659"),
      arity = Seq(1)) { args => SbbfHash(args(0), WriterSettings.current) },

    describe("sbbf_num_bytes", classOf[SbbfNumBytes], "misc_funcs",
      usage = "_FUNC_(ndv, fpp) - Returns the bitset size in bytes of a Parquet bloom filter for ndv distinct " +
        "values at false-positive probability fpp: a power of two from 32 B to 128 MiB.",
      arguments = Seq("ndv" -> "expected number of distinct values, >= 0",
        "fpp" -> "a constant false-positive probability in (0, 1)"),
      examples = Seq("SELECT _FUNC_(10000, 0.01);" -> "16384", "SELECT _FUNC_(1000000, 0.001);" -> "2097152"),
      arity = Seq(2)) { args => SbbfNumBytes(args(0), args(1)) },

    describe("sbbf_agg", classOf[SbbfAgg], "agg_funcs",
      usage = "_FUNC_(expr, num_bytes) - Returns the raw bitset (no header) of a Parquet split block bloom " +
        "filter of num_bytes bytes holding every non-null value of expr, byte-identical to what parquet-java " +
        "writes for the same values and size.",
      arguments = Seq("expr" -> "the values to insert",
        "num_bytes" ->
          "a constant positive multiple of 32, at most 134217728 (128 MiB); see sbbf_num_bytes"),
      examples = Seq("SELECT length(_FUNC_(col, 64)) FROM VALUES (1), (2), (3) AS t(col);" -> "64"),
      arity = Seq(2)) { args => SbbfAgg(args(0), args(1), WriterSettings.current) },

    describe("sbbf_might_contain", classOf[SbbfMightContain], "predicate_funcs",
      usage = "_FUNC_(bitset, expr) - Returns false if expr's value is certainly not in the bitset built by " +
        "sbbf_agg, true if it may be. Returns NULL if either argument is NULL.",
      arguments = Seq("bitset" -> "a raw bitset as returned by sbbf_agg",
        "expr" -> "a value of the same type the bitset was built from"),
      examples = Seq(("SELECT _FUNC_(sbbf_agg(col, 64), 2), _FUNC_(sbbf_agg(col, 64), 4) " +
        "FROM VALUES (1), (2), (3) AS t(col);") -> "true\tfalse"),
      arity = Seq(2)) { args => SbbfMightContain(args(0), args(1), WriterSettings.current) })

  private def describe(name: String, cls: Class[_], group: String, usage: String, arguments: Seq[(String, String)],
                       examples: Seq[(String, String)], arity: Seq[Int])(
      build: Seq[Expression] => Expression): SparkSessionExtensions#FunctionDescription = {
    val args = arguments.map { case (a, d) => s"      * $a - $d\n" }.mkString("\n    Arguments:\n", "", "  ")
    val exs = examples.map { case (q, r) => s"      > $q\n       $r\n" }.mkString("\n    Examples:\n", "", "  ")
    val info = new ExpressionInfo(cls.getCanonicalName, null, name, usage, args, exs, "", group, "0.1.0", "", "")
    val builder: Seq[Expression] => Expression = children =>
      if (arity.contains(children.size)) build(children)
      else throw new AnalysisException("WRONG_NUM_ARGS.WITHOUT_SUGGESTION",
        Map("functionName" -> s"`$name`",
          "expectedNum" -> arity.mkString(" or "), "actualNum" -> children.size.toString,
          "docroot" -> "https://spark.apache.org/docs/latest"))
    (FunctionIdentifier(name), info, builder)
  }
}
