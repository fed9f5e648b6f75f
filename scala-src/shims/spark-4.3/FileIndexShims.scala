package sparkbloom.shims

import org.apache.spark.sql.execution.datasources.FileIndex

/** Spark 4.3 adds `FileIndex.isTimeTravel` (with a default): a wrapping index answers as the wrapped one. */
trait FileIndexShims extends FileIndex {
  protected def delegate: FileIndex

  override def isTimeTravel: Boolean = delegate.isTimeTravel
}
