package sparkbloom.lakehouse

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

import sparkbloom.index.{ResolvedTable, TableRef}

/**
 * Delta Lake and Iceberg support, for Spark lines their projects publish no artifacts for yet (see
 * `lakehouse.<line>` in project/versions.properties): nothing is recognised, so such tables are never pruned
 * and an index cannot be built on them (they are refused as not Parquet).
 */
object Lakehouse {
  def resolve(spark: SparkSession, ref: TableRef): Option[ResolvedTable] = None
  def tableRef(plan: LogicalPlan): Option[TableRef] = None
  def isIcebergTable(t: Table): Boolean = false
  def rewriteIceberg(session: SparkSession, root: LogicalPlan, cond: Expression,
                     r: DataSourceV2Relation): Option[DataSourceV2Relation] = None
}

class LakehousePreCboRule(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan
}
