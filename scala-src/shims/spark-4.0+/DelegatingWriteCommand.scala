package sparkbloom.shims

import org.apache.spark.sql.Row
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.command.DataWritingCommand

/**
 * A write command that runs another one, then does something after it (maintenance on write). Its `run` takes the
 * session type this Spark line's DataWritingCommand takes (org.apache.spark.sql.classic.SparkSession).
 */
abstract class DelegatingWriteCommand extends DataWritingCommand {
  def inner: DataWritingCommand

  /** Before the inner command runs. */
  protected def beforeRun(session: org.apache.spark.sql.SparkSession): Unit

  /** After the inner command has run (and committed). */
  protected def afterRun(session: org.apache.spark.sql.SparkSession): Unit

  override def run(session: org.apache.spark.sql.classic.SparkSession, child: SparkPlan): Seq[Row] = {
    beforeRun(session)
    val rows = inner.run(session, child)
    afterRun(session)
    rows
  }
}
