package sparkbloom.shims

import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}

/**
 * A `LogicalRelation` over files, matched by field rather than by position: Spark 3.5's LogicalRelation
 * has four fields, 4.x's five (`stream`). Gives (the relation node, its HadoopFsRelation, output, catalog
 * table, is streaming).
 */
object FsRelation {
  def unapply(plan: LogicalPlan)
      : Option[(LogicalRelation, HadoopFsRelation, Seq[AttributeReference], Option[CatalogTable], Boolean)] =
    plan match {
      case l: LogicalRelation => l.relation match {
          case r: HadoopFsRelation => Some((l, r, l.output, l.catalogTable, l.isStreaming))
          case _ => None
        }
      case _ => None
    }
}
