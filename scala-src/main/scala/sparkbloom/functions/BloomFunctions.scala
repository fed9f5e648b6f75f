package sparkbloom.functions

import org.apache.spark.sql.SparkSessionExtensions

// PLACEHOLDER (being replaced by the SQL functions work).
object BloomFunctions {
  val all: Seq[SparkSessionExtensions#FunctionDescription] = Seq.empty
}
