package sparkbloom

import org.apache.spark.sql.SparkSession

/** Every sparkbloom configuration key, with its default. Set them like any Spark SQL conf. */
object BloomConf {
  /** Master switch for skipping. With false, queries run exactly as without sparkbloom. */
  val Enabled = "spark.sparkbloom.enabled"
  /** Where indexes live for lakes the user cannot write to; default: `_sparkbloom/` in each table root. */
  val IndexRoot = "spark.sparkbloom.index.root"
  /** Row-group pruning inside kept files (file pruning always applies). */
  val RowGroupPruning = "spark.sparkbloom.rowGroupPruning.enabled"
  /** Take filters already inside the files instead of scanning the column, when valid. */
  val Harvest = "spark.sparkbloom.harvest.enabled"
  /** Default target false-positive probability for new filters. */
  val DefaultFpp = "spark.sparkbloom.fpp"

  def enabled(s: SparkSession): Boolean = s.conf.get(Enabled, "true").toBoolean
  def indexRoot(s: SparkSession): Option[String] = Option(s.conf.get(IndexRoot, null)).filter(_.nonEmpty)
  def rowGroupPruning(s: SparkSession): Boolean = s.conf.get(RowGroupPruning, "true").toBoolean
  def harvest(s: SparkSession): Boolean = s.conf.get(Harvest, "true").toBoolean
  def defaultFpp(s: SparkSession): Double = s.conf.get(DefaultFpp, "0.01").toDouble
}
