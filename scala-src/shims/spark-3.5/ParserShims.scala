package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.ParserInterface

/** Spark 3.5's ParserInterface: the methods common to every line, all forwarded by BloomSqlParser. */
trait ParserShims extends ParserInterface {
  protected def delegate: ParserInterface
}
