package sparkbloom.api

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.analysis.{caseInsensitiveResolution, caseSensitiveResolution}
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LocalRelation, LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.execution.LogicalRDD
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

import sparkbloom.formats.TableFormats
import sparkbloom.index.{BloomIndexException, NotIndexableException, TableFormat, TableRef}

/**
 * Which table, and which of its columns, `df.bloomFilterIndex(cols)` means: only a plain scan of a table one of
 * the table formats recognises (Spark's V1 or V2 Parquet source, Delta Lake, Iceberg), so that the index describes
 * exactly the files the DataFrame's rows come from. Column selections, renames, filters and views are looked
 * through; anything that combines or computes rows is refused, and so is a requested column that is computed
 * rather than read from the files.
 */
object DataFrameTable {
  val Supported: String =
    "a DataFrame that reads Parquet files directly: spark.read.parquet(path) of one directory or file, " +
      "spark.table(name) of a Parquet, Delta or Iceberg table, or spark.read.format(\"delta\").load(path), " +
      "optionally with select / where / filter on top"

  /** The table and the names in its files of the DataFrame columns `columns`. */
  final case class Target(table: TableRef, columns: Seq[String])

  def target(df: DataFrame, columns: Seq[String]): Target = {
    val plan = df.queryExecution.analyzed
    val (table, relation) = scan(plan)
    val caseSensitive = df.sparkSession.conf.get("spark.sql.caseSensitive", "false").toBoolean
    val resolver = if (caseSensitive) caseSensitiveResolution else caseInsensitiveResolution
    Target(table,
      columns.map { requested =>
        // "a.b" is field b of struct column a unless the DataFrame has a column literally named "a.b".
        val (head, rest) = plan.output.find(a => resolver(a.name, requested)) match {
          case Some(a) => (a, "")
          case None =>
            val dot = requested.indexOf('.')
            plan.output.find(a => dot > 0 && resolver(a.name, requested.substring(0, dot))) match {
              case Some(a) => (a, requested.substring(dot))
              case None => throw new BloomIndexException(
                  s"Column $requested is not in the DataFrame (columns: ${plan.output.map(_.name).mkString(", ")}).")
            }
        }
        val source = trace(plan, head.exprId).flatMap(id => relation.output.find(_.exprId == id)).getOrElse(
          throw new BloomIndexException(s"Column $requested is computed by the DataFrame, not read from the Parquet " +
            "files; a bloom index covers the files' own columns."))
        source.name + rest
      })
  }

  /** The attribute of the scan that `id` is, through projections and renames; None when it is computed. */
  private def trace(plan: LogicalPlan, id: ExprId): Option[ExprId] = plan match {
    case p: Project =>
      p.projectList.find(_.exprId == id) match {
        case Some(a: Attribute) => trace(p.child, a.exprId)
        case Some(Alias(a: Attribute, _)) => trace(p.child, a.exprId)
        case _ => None
      }
    case l: LogicalRelation => Some(id).filter(i => l.output.exists(_.exprId == i))
    case r: DataSourceV2Relation => Some(id).filter(i => r.output.exists(_.exprId == i))
    case other if other.children.size == 1 => trace(other.children.head, id) // Filter, SubqueryAlias, View
    case _ => None
  }

  private def scan(plan: LogicalPlan): (TableRef, LogicalPlan) = plan match {
    case p: Project => scan(p.child)
    case f: Filter => scan(f.child)
    case s: SubqueryAlias => scan(s.child)
    case v: View => scan(v.child)
    case leaf =>
      val table = try TableFormat.first(TableFormats.all)(_.tableOf(leaf))
      catch {
        case e: NotIndexableException => unsupported(e.reason)
      }
      table.map(_ -> leaf).getOrElse(leaf match {
        case l: LogicalRelation => l.relation match {
            case fs: HadoopFsRelation => unsupported(s"reads ${fs.fileFormat} files, not Parquet")
            case other => unsupported(s"reads from ${other.getClass.getSimpleName}, not Parquet files")
          }
        case r: DataSourceV2Relation =>
          unsupported(s"reads ${r.table.name()} through a DataSource V2 connector sparkbloom does not index (it " +
            "indexes Spark's own Parquet source, Delta Lake and Iceberg tables)")
        case _: LocalRelation | _: LogicalRDD => unsupported("holds in-memory data, not Parquet files")
        case other => unsupported(s"is not a plain scan: its plan contains ${other.nodeName}")
      })
  }

  private def unsupported(reason: String): Nothing =
    throw new BloomIndexException(s"A bloom index can only be built over $Supported. This DataFrame $reason.")
}
