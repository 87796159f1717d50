"""The ledger's run link without a per-row foreign-key check: a trigger refuses deleting a run that has events.

Ingest COPYs thousands of rows per batch; the foreign key's RI trigger checked the run for every one of them
(~40 % of the COPY, bench/README.md, issue 28). Rows are only ever written for a run locked by the writer, so
what the constraint still guarded is a run deleted under its ledger: the trigger below refuses that, with the
same SQLSTATE as the foreign key did (Django raises IntegrityError). The run-only index goes too: the unique
(run, seq) and (run, dedupe_key) indexes serve every look-up by run.
"""

import django.db.models.deletion
from django.db import migrations, models

REFUSE_RUN_DELETE = """
CREATE OR REPLACE FUNCTION awp_refuse_run_with_ledger() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM experiments_event WHERE run_id = OLD.id) THEN
        RAISE EXCEPTION 'run % has ledger events: the ledger is append-only', OLD.id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN OLD;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER experiments_run_keeps_its_ledger BEFORE DELETE ON experiments_run
    FOR EACH ROW EXECUTE FUNCTION awp_refuse_run_with_ledger();
"""

UNDO = """
DROP TRIGGER IF EXISTS experiments_run_keeps_its_ledger ON experiments_run;
DROP FUNCTION IF EXISTS awp_refuse_run_with_ledger();
"""


class Migration(migrations.Migration):
    dependencies = [("experiments", "0006_truth_order_ts_source")]

    operations = [
        migrations.RunSQL(REFUSE_RUN_DELETE, reverse_sql=UNDO),
        migrations.AlterField(
            model_name="event",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="events",
                to="experiments.run",
            ),
        ),
    ]
