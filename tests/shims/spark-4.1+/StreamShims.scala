package sparkbloom.testing

/** Spark's in-memory stream source for the streaming-sink suites (Spark 4.1 moved it to streaming.runtime). */
object StreamShims {
  type MemoryStream[A] = org.apache.spark.sql.execution.streaming.runtime.MemoryStream[A]
  val MemoryStream: org.apache.spark.sql.execution.streaming.runtime.MemoryStream.type =
    org.apache.spark.sql.execution.streaming.runtime.MemoryStream
}
