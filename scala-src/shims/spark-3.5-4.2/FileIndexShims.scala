package sparkbloom.shims

import org.apache.spark.sql.execution.datasources.FileIndex

/** FileIndex until Spark 4.2: nothing beyond what every line has. */
trait FileIndexShims extends FileIndex {
  protected def delegate: FileIndex
}
