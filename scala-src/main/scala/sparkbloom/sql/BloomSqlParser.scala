package sparkbloom.sql

import org.apache.spark.sql.catalyst.parser.ParserInterface

// PLACEHOLDER (being replaced by the parser work): forwards everything to Spark's parser.
class BloomSqlParser(delegate: ParserInterface) extends ParserInterface {
  override def parsePlan(sqlText: String) = delegate.parsePlan(sqlText)
  override def parseExpression(sqlText: String) = delegate.parseExpression(sqlText)
  override def parseTableIdentifier(sqlText: String) = delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String) = delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String) = delegate.parseMultipartIdentifier(sqlText)
  override def parseTableSchema(sqlText: String) = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String) = delegate.parseDataType(sqlText)
  override def parseQuery(sqlText: String) = delegate.parseQuery(sqlText)
  override def parseRoutineParam(sqlText: String) = delegate.parseRoutineParam(sqlText)
}
