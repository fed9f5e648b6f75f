package sparkbloom.predicate

import org.apache.spark.sql.catalyst.expressions.{
  And => CAnd, AttributeReference, EqualNullSafe, EqualTo, ExprId, Expression, In => CIn, InSet, IsNull => CIsNull,
  Literal, Or => COr
}
import org.apache.spark.sql.types.DataType

/**
 * The part of a filter condition a bloom index can answer, as a small tree. Evaluated against one row
 * group's filters it says "cannot match" (false) or "might match" (true); everything it does not
 * understand is [[BloomPredicate.Unknown]], which always might match.
 *
 * AND prunes when either side prunes, OR only when both do, exactly as parquet-java's `BloomFilterImpl`.
 */
sealed trait BloomPredicate { def sql: String }

object BloomPredicate {
  /** The column equals one of `values` (non-null Catalyst values of `dataType`). */
  final case class In(column: String, dataType: DataType, values: Seq[Any]) extends BloomPredicate {
    def sql: String = if (values.size == 1) s"$column = ${values.head}"
    else s"$column IN (${values.take(5).mkString(", ")}${if (values.size > 5) ", ..." else ""})"
  }
  final case class IsNull(column: String) extends BloomPredicate { def sql = s"$column IS NULL" }
  final case class And(left: BloomPredicate, right: BloomPredicate) extends BloomPredicate {
    def sql = s"(${left.sql} AND ${right.sql})"
  }
  final case class Or(left: BloomPredicate, right: BloomPredicate) extends BloomPredicate {
    def sql = s"(${left.sql} OR ${right.sql})"
  }
  /** Nothing can match (e.g. `c = NULL`, `c IN ()`). */
  case object Nothing extends BloomPredicate { def sql = "false" }
  case object Unknown extends BloomPredicate { def sql = "unknown" }

  /**
   * Translates a condition over the relation's attributes. `indexed` maps an attribute's exprId to the
   * indexed column name; columns under a cast, non-literal operands, NOT, and anything else: Unknown.
   */
  def translate(e: Expression, indexed: ExprId => Option[String]): BloomPredicate = {
    def col(a: Expression): Option[(String, DataType)] = a match {
      case ar: AttributeReference => indexed(ar.exprId).map(_ -> ar.dataType)
      case _ => None
    }
    def lit(v: Expression, dt: DataType): Option[Any] = v match {
      case Literal(value, t) if t == dt => Some(value)
      case _ => None
    }
    def eq(a: Expression, b: Expression, nullSafe: Boolean): BloomPredicate = (col(a), col(b)) match {
      case (Some((c, dt)), None) => eqLit(c, dt, b, nullSafe)
      case (None, Some((c, dt))) => eqLit(c, dt, a, nullSafe)
      case _ => Unknown
    }
    def eqLit(c: String, dt: DataType, v: Expression, nullSafe: Boolean): BloomPredicate = lit(v, dt) match {
      case Some(null) => if (nullSafe) IsNull(c) else Nothing
      case Some(x) => In(c, dt, Seq(x))
      case None => Unknown
    }
    e match {
      case EqualTo(a, b) => eq(a, b, nullSafe = false)
      case EqualNullSafe(a, b) => eq(a, b, nullSafe = true)
      case CIn(a, list) => col(a) match {
          case Some((c, dt)) =>
            val lits = list.map(lit(_, dt))
            if (lits.exists(_.isEmpty)) Unknown
            else { val vs = lits.flatten.filter(_ != null); if (vs.isEmpty) Nothing else In(c, dt, vs) }
          case None => Unknown
        }
      case InSet(a, set) => col(a) match {
          case Some((c, dt)) => val vs = set.toSeq.filter(_ != null); if (vs.isEmpty) Nothing else In(c, dt, vs)
          case None => Unknown
        }
      case CIsNull(a) => col(a).map(c => IsNull(c._1)).getOrElse(Unknown)
      case CAnd(l, r) => and(translate(l, indexed), translate(r, indexed))
      case COr(l, r) => or(translate(l, indexed), translate(r, indexed))
      case _ => Unknown
    }
  }

  def and(l: BloomPredicate, r: BloomPredicate): BloomPredicate = (l, r) match {
    case (Unknown, x) => x
    case (x, Unknown) => x
    case (Nothing, _) | (_, Nothing) => Nothing
    case _ => And(l, r)
  }

  def or(l: BloomPredicate, r: BloomPredicate): BloomPredicate = (l, r) match {
    case (Unknown, _) | (_, Unknown) => Unknown
    case (Nothing, x) => x
    case (x, Nothing) => x
    case _ => Or(l, r)
  }

  def columns(p: BloomPredicate): Set[String] = p match {
    case In(c, _, _) => Set(c)
    case IsNull(c) => Set(c)
    case And(l, r) => columns(l) ++ columns(r)
    case Or(l, r) => columns(l) ++ columns(r)
    case _ => Set.empty
  }
}
