package sparkbloom.reliability

import scala.util.Random

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._

import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, TableRef}
import sparkbloom.testing.SparkSessionSuite

/**
 * Key-set pruning, checked differentially: random joins (every join type, `=` and `<=>`), `IN (subquery)`,
 * `NOT IN`, `EXISTS` and `NOT EXISTS` between an indexed table and random key sides (present and absent keys,
 * NULLs, duplicates, empty sides, keys of another type), under random AQE / broadcast settings, each run with
 * sparkbloom on and off; the rows must be identical. The suite also checks that pruning happened in a good
 * share of the cases (a fuzz that never prunes would prove nothing).
 *
 * Size: `SPARKBLOOM_KEYSET_FUZZ_CASES` (default 50 in CI, ~0.4-1 s each; 75 until CI landed at 81 minutes, 150
 * until it passed 60 minutes).
 * Long run (docs/runtime-pruning.md):
 * {{{
 *   SPARKBLOOM_KEYSET_FUZZ_CASES=3000 dev/sbt "testOnly sparkbloom.reliability.KeySetFuzzSuite"
 * }}}
 * A failure prints the seed, the case number and the query.
 */
class KeySetFuzzSuite extends SparkSessionSuite {
  override protected def sparkConf: Map[String, String] =
    Map("spark.sparkbloom.runtimePruning.minTableSize" -> "0")

  private val seed = sys.env.get("SPARKBLOOM_KEYSET_FUZZ_SEED").map(_.toLong).getOrElse(20261126L)
  private val cases = sys.env.get("SPARKBLOOM_KEYSET_FUZZ_CASES").map(_.toInt).getOrElse(50)

  private val schema = StructType(Seq(
      StructField("l", LongType), StructField("i", IntegerType), StructField("s", StringType),
      StructField("d", DoubleType), StructField("v", IntegerType)))

  /** 30 files of 80 rows: keys drawn from small domains (duplicates), NULLs, -0.0 / NaN among the doubles. */
  private lazy val (factPath: String, factRows: IndexedSeq[Row]) = {
    val rng = new Random(seed)
    val rows = (0 until 2400).map { n =>
      def maybeNull[T](v: T): Any = if (rng.nextInt(40) == 0) null else v
      val d = rng.nextInt(20) match {
        case 0 => -0.0
        case 1 => Double.NaN
        case _ => (rng.nextInt(500) - 250) / 4.0
      }
      Row(maybeNull(rng.nextInt(3000).toLong), maybeNull(rng.nextInt(3000)), maybeNull(s"key-${rng.nextInt(3000)}"),
        maybeNull(d), n % 7)
    }
    val path = tempDir("ksfuzz") + "/t"
    spark.createDataFrame(spark.sparkContext.parallelize(rows, 30), schema).write.parquet(path)
    BloomIndexes.create(spark, TableRef.Path(path), "ix", Seq("l", "i", "s", "d").map(ColumnSpec(_)), Map.empty,
      ifNotExists = false)
    (path, rows)
  }

  private def keySide(rng: Random): Seq[Row] = {
    val n = rng.nextInt(12) match {
      case 0 => 0 // empty
      case 1 => 60 + rng.nextInt(60) // more keys than the pruning share allows: declined at run time
      case _ => 1 + rng.nextInt(8)
    }
    (0 until n).map { _ =>
      val r = factRows(rng.nextInt(factRows.size))
      def absent[T](v: T, other: T): Any = if (rng.nextInt(4) == 0) other else v
      Row(absent(r.get(0), 900000L + rng.nextInt(10)), absent(r.get(1), -5 - rng.nextInt(10)),
        absent(r.get(2), "absent"), absent(r.get(3), 1e9), if (rng.nextInt(10) == 0) null else r.get(0))
    }
  }

  private val keySchema = StructType(Seq(
      StructField("kl", LongType), StructField("ki", IntegerType), StructField("ks", StringType),
      StructField("kd", DoubleType), StructField("kn", LongType)))

  test("random joins and subqueries over run-time keys return the same rows as without sparkbloom") {
    val rng = new Random(seed + 1)
    val fact = () => spark.read.parquet(factPath)
    var pruned = 0
    for (c <- 0 until cases) {
      val keys = spark.createDataFrame(spark.sparkContext.parallelize(keySide(rng), 1), keySchema)
      keys.createOrReplaceTempView("keys")
      fact().createOrReplaceTempView("fact")
      val (col, kcol) =
        Seq("l" -> "kl", "i" -> "ki", "s" -> "ks", "d" -> "kd", "i" -> "kl", "l" -> "kn")(rng.nextInt(6))
      val op = if (rng.nextInt(4) == 0) "<=>" else "="
      val joinType = Seq("INNER", "LEFT SEMI", "LEFT ANTI", "LEFT OUTER", "RIGHT OUTER", "FULL OUTER")(rng.nextInt(6))
      val query = rng.nextInt(7) match {
        case 0 => s"SELECT * FROM fact WHERE $col IN (SELECT $kcol FROM keys)"
        case 1 => s"SELECT * FROM fact WHERE $col NOT IN (SELECT $kcol FROM keys)"
        case 2 => s"SELECT * FROM fact f WHERE EXISTS (SELECT 1 FROM keys k WHERE k.$kcol = f.$col)"
        case 3 => s"SELECT * FROM fact f WHERE NOT EXISTS (SELECT 1 FROM keys k WHERE k.$kcol = f.$col)"
        case 4 => s"SELECT * FROM keys k $joinType JOIN fact f ON f.$col $op k.$kcol"
        case _ => s"SELECT * FROM fact f $joinType JOIN keys k ON f.$col $op k.$kcol AND f.v >= 0"
      }
      val settings = Seq(
        "spark.sql.adaptive.enabled" -> rng.nextBoolean().toString,
        "spark.sql.autoBroadcastJoinThreshold" -> (if (rng.nextBoolean()) "10485760" else "-1"))
      withSQLConf(settings: _*) {
        val o = compare(sql(query))
        assert(o.on == o.off,
          s"seed $seed case $c: rows differ with sparkbloom on (${o.on.size} vs ${o.off.size}): $query $settings")
        if (o.skipping.exists(_.keysProbed > 0)) pruned += 1
      }
    }
    info(s"$cases cases, $pruned pruned by run-time keys")
    assert(pruned >= cases / 4, s"only $pruned of $cases cases were pruned by run-time keys")
  }
}
