package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.trees.Origin

/** Spark 3.5 and 4.0: ParseException takes a start and a stop origin. */
object ParseErrors {
  def parseException(sql: String, at: Origin, condition: String, parameters: Map[String, String]): ParseException =
    new ParseException(Some(sql), at, at, condition, parameters)
}
