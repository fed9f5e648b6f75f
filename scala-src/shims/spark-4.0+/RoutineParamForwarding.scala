package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.types.StructType

/** Spark 4.0 added `ParserInterface.parseRoutineParam` (abstract): forwarded. */
trait RoutineParamForwarding extends ParserInterface {
  protected def delegate: ParserInterface

  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)
}
