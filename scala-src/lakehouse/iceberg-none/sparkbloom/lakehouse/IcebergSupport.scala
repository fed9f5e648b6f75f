package sparkbloom.lakehouse

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

import sparkbloom.index.{ResolvedTable, TableRef}

/**
 * Iceberg support for a Spark line Iceberg publishes no runtime for (no iceberg-spark-runtime in its
 * `lakehouse.<line>` row): never used, since [[Lakehouse.icebergPresent]] is false when `compiled` is.
 */
object IcebergSupport {
  val compiled: Boolean = false
  def tableRef(r: DataSourceV2Relation): Option[TableRef] = None
  def resolve(spark: SparkSession, ref: TableRef, analyzed: Option[LogicalPlan]): Option[ResolvedTable] = None
  def rewrite(session: SparkSession, cond: Expression, r: DataSourceV2Relation): Option[DataSourceV2Relation] = None
}
