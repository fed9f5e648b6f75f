package sparkbloom.testing

/** Spark's in-memory stream source for the streaming-sink suites (Spark 3.5 and 4.0: execution.streaming). */
object StreamShims {
  type MemoryStream[A] = org.apache.spark.sql.execution.streaming.MemoryStream[A]
  val MemoryStream: org.apache.spark.sql.execution.streaming.MemoryStream.type =
    org.apache.spark.sql.execution.streaming.MemoryStream
}
