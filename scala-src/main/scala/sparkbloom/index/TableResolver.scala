package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/** Resolves a table reference for indexing through the table formats, in their order. */
object TableResolver {
  def resolve(spark: SparkSession, ref: TableRef, formats: Seq[TableFormat], refresh: Boolean = false)
      : ResolvedTable = {
    // A catalog name is analysed at most once, whichever formats ask (None: no such table).
    lazy val analyzed: Option[LogicalPlan] = ref match {
      case TableRef.Catalog(name) => try Some(spark.table(name).queryExecution.analyzed)
        catch { case NonFatal(_) => None }
      case _ => None
    }
    TableFormat.first(formats)(_.resolve(spark, ref, () => analyzed, refresh)).getOrElse(
      throw new BloomIndexException(s"${ref.display} is not a table sparkbloom can index " +
        s"(table formats: ${formats.map(_.name).mkString(", ")})"))
  }
}
