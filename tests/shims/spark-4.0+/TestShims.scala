package sparkbloom.testing

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.classic
import org.apache.spark.sql.types.StringType
import org.scalatest.Assertions

/**
 * What the Scala suites do differently on Spark 4.0 and later (tests/shims/spark-4.0+; Spark 3.5:
 * tests/shims/spark-3.5), chosen like scala-src/shims by build.sbt's variant-directory rule.
 */
object TestShims {
  /** Spark 4.0 and later have collations (COLLATE, collated StringTypes). */
  val collations: Boolean = true

  /** Cancels the calling test where the line has no collations (never here). */
  def assumeCollations(): Unit = Assertions.assume(collations, "this Spark line has no collations")

  /** A StringType under `collation`, e.g. UTF8_LCASE. */
  def collatedString(collation: String): StringType = StringType(collation)

  /** Whether the line's Delta Lake can CREATE OR REPLACE TABLE ... AS SELECT (Delta 4.x can). */
  val deltaReplaceTableAsSelect: Boolean = true

  /** The error condition of a Spark error. */
  def errorCondition(e: SparkThrowable): String = e.getCondition

  /** The session's SQL parser (the classic session's: Spark 4's SparkSession is the API one). */
  def sqlParser(spark: SparkSession): ParserInterface = spark.asInstanceOf[classic.SparkSession].sessionState.sqlParser
}
