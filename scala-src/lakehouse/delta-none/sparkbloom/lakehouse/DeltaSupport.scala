package sparkbloom.lakehouse

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}

import sparkbloom.index.{ResolvedTable, TableRef}

/**
 * Delta Lake support for a Spark line Delta publishes no artifact for (no delta-spark in its
 * `lakehouse.<line>` row): never used, since [[Lakehouse.deltaPresent]] is false when `compiled` is.
 */
object DeltaSupport {
  val compiled: Boolean = false
  def isPreparedIndex(f: FileIndex): Boolean = false
  def isDeltaIndex(f: FileIndex): Boolean = false
  def tableRef(plan: LogicalPlan): Option[TableRef] = None
  def resolve(spark: SparkSession, ref: TableRef, analyzed: => Option[LogicalPlan]): Option[ResolvedTable] = None
  def rewrite(session: SparkSession, cond: Expression, l: LogicalRelation, rel: HadoopFsRelation): Option[LogicalRelation] = None
}
