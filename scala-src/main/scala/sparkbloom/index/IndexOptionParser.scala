package sparkbloom.index

import org.apache.spark.sql.SparkSession

import sparkbloom.BloomConf

/** The index-wide options of a new index, checked, with the session's defaults filled in. */
object IndexOptionParser {
  /**
   * Option keys of CREATE BLOOM INDEX and its Scala and Python forms. [[FppScopeKey]] comes from Databricks' DDL
   * only (its fpp is per file).
   */
  val FalseReadsPerKeyKey = "false_reads_per_key"
  val FppScopeKey = "sparkbloom.fpp_scope"
  /** `false` opts an index out of maintenance on write (its table's writes leave their files uncovered). */
  val MaintainOnWriteKey = "maintain_on_write"

  /**
   * The index-wide options, with the session's defaults filled in: an explicit `fpp` wins; otherwise the
   * budget `false_reads_per_key` (given, or `spark.sparkbloom.falseReadsPerKey`), unless the session sets a
   * default `spark.sparkbloom.fpp`.
   */
  def parse(spark: SparkSession, options: Map[String, String]): TableOptions = {
    var fpp: Option[Double] = None; var ndv: Option[Long] = None; var budget: Option[Double] = None
    var perFile = false; var maintain: Option[Boolean] = None
    options.foreach { case (k, v) =>
      k.toLowerCase(java.util.Locale.ROOT) match {
        case "fpp" => fpp = Some(parseFpp(v))
        case "ndv" | "numitems" => ndv = Some(parseNdv(v))
        case FalseReadsPerKeyKey => budget = Some(parseBudget(FalseReadsPerKeyKey, v))
        case FppScopeKey => perFile = v == IndexedColumn.FileScope
        case MaintainOnWriteKey => maintain = Some(parseBoolean(MaintainOnWriteKey, v))
        case other => throw new BloomIndexException(
            s"Unknown bloom index option '$other' (supported: fpp, ndv, $FalseReadsPerKeyKey, $MaintainOnWriteKey)")
      }
    }
    if (fpp.isDefined && budget.isDefined)
      throw new BloomIndexException(
        s"Give either fpp (per row group) or $FalseReadsPerKeyKey (for the whole table), not both")
    if (fpp.isEmpty && budget.isEmpty) {
      fpp = BloomConf.defaultFpp(spark).map(f => checkConf(BloomConf.DefaultFpp, f, x => x > 0 && x < 1))
      if (fpp.isEmpty) budget = Some(checkConf(BloomConf.FalseReadsPerKey, BloomConf.falseReadsPerKey(spark), _ > 0))
    }
    val maxBpv = BloomConf.maxBitsPerValue(spark)
    checkConf(BloomConf.MaxBitsPerValue, maxBpv, b => b >= 8 && b <= 64)
    TableOptions(fpp, ndv, budget, perFile, maintain)
  }

  def parseBoolean(key: String, v: String): Boolean = v.trim.toLowerCase(java.util.Locale.ROOT) match {
    case "true" => true
    case "false" => false
    case _ => throw new BloomIndexException(s"Option $key must be true or false, got '$v'")
  }

  private def checkConf(key: String, v: Double, ok: Double => Boolean): Double =
    if (ok(v) && !v.isNaN && !v.isInfinite) v else throw new BloomIndexException(s"Invalid value $v for $key")

  private def parseFpp(v: String): Double = {
    val d = try v.trim.toDouble
    catch {
      case _: NumberFormatException => throw new BloomIndexException(s"Option fpp must be a number in (0, 1), got '$v'")
    }
    if (!(d > 0 && d < 1)) throw new BloomIndexException(s"Option fpp must be in (0, 1), got $v")
    d
  }

  def parseBudget(key: String, v: String): Double = {
    val d = try v.trim.toDouble
    catch {
      case _: NumberFormatException => throw new BloomIndexException(s"Option $key must be a positive number, got '$v'")
    }
    if (!(d > 0) || d.isInfinite) throw new BloomIndexException(s"Option $key must be a positive number, got $v")
    d
  }

  private def parseNdv(v: String): Long = {
    val n = try v.trim.toLong
    catch {
      case _: NumberFormatException => throw new BloomIndexException(s"Option ndv must be a positive integer, got '$v'")
    }
    if (n <= 0) throw new BloomIndexException(s"Option ndv must be a positive integer, got $v")
    n
  }
}
