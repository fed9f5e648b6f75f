package sparkbloom.testing

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.types.StringType
import org.scalatest.Assertions

/**
 * What the Scala suites do differently on Spark 3.5 (tests/shims/spark-3.5; Spark 4.0 and later:
 * tests/shims/spark-4.0+), chosen like scala-src/shims by build.sbt's variant-directory rule.
 */
object TestShims {
  /** Spark 3.5 has no collations (Spark 4.0 added them): every string compares byte for byte. */
  val collations: Boolean = false

  /** Cancels the calling test: its subject, collated strings, does not exist on Spark 3.5. */
  def assumeCollations(): Unit =
    Assertions.assume(collations, "Spark 3.5 has no collations (COLLATE and collated StringTypes are Spark 4.0+)")

  /** Spark 3.5 has no collated StringType; tests that need one call [[assumeCollations]] first. */
  def collatedString(collation: String): StringType =
    throw new UnsupportedOperationException(s"Spark 3.5 has no collation $collation")

  /**
   * Whether the line's Delta Lake can CREATE OR REPLACE TABLE ... AS SELECT. Not Delta 3.3 on Spark 3.5.9: Spark
   * 3.5.6 and later plan the replacing write as an overwrite (TRUNCATE), which Delta 3.3's staged table does not
   * declare ("does not support truncate in batch mode", delta-io/delta#4671).
   */
  val deltaReplaceTableAsSelect: Boolean = false

  /** The error condition of a Spark error (Spark 3.5 calls it the error class). */
  def errorCondition(e: SparkThrowable): String = e.getErrorClass

  /** The session's SQL parser (Spark 3.5's SparkSession is the classic one). */
  def sqlParser(spark: SparkSession): ParserInterface = spark.sessionState.sqlParser
}
