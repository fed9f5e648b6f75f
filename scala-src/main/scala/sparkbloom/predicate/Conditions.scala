package sparkbloom.predicate

import org.apache.spark.sql.catalyst.expressions.{And, Expression, InSet, Literal}

/** What a filter condition allows a scan to prune by, and which of parquet-java's own levels it must guard. */
object Conditions {

  /**
   * The conjuncts of `cond` before its first non-deterministic one (what Spark itself pushes to a scan): pruning
   * on the others would change which rows a non-deterministic conjunct sees.
   */
  def pushable(cond: Expression): Expression = {
    def split(e: Expression): Seq[Expression] = e match {
      case And(l, r) => split(l) ++ split(r)
      case other => Seq(other)
    }
    split(cond).takeWhile(_.deterministic).reduceOption(And).getOrElse(Literal.TrueLiteral)
  }

  /** Whether `cond` holds a float or double NaN literal. */
  def comparesWithNaN(cond: Expression): Boolean = cond.exists {
    case Literal(v: Double, _) => v.isNaN
    case Literal(v: Float, _) => v.isNaN
    case InSet(_, set) => set.exists {
        case d: Double => d.isNaN
        case f: Float => f.isNaN
        case _ => false
      }
    case _ => false
  }

  /** Whether `cond` holds a float or double literal equal to zero (either sign). */
  def comparesWithFloatingZero(cond: Expression): Boolean = cond.exists {
    case Literal(v: Double, _) => v == 0.0d
    case Literal(v: Float, _) => v == 0.0f
    case InSet(_, set) => set.exists {
        case d: Double => d == 0.0d
        case f: Float => f == 0.0f
        case _ => false
      }
    case _ => false
  }
}
