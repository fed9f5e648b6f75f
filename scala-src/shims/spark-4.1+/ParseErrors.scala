package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.trees.Origin

/** Spark 4.1 and later: ParseException takes the start origin only. */
object ParseErrors {
  def parseException(sql: String, at: Origin, condition: String, parameters: Map[String, String]): ParseException =
    new ParseException(Some(sql), at, condition, parameters)
}
