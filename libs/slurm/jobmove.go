package slurm

import "context"

// MovePendingJob runs `scontrol update jobid=ID partition=PARTITION`: a pending job is
// queued in another partition (Slurm refuses it for a job that already runs). A refusal
// gives a *CommandError.
func (c *Client) MovePendingJob(ctx context.Context, id, partition string) error {
	if err := checkName("job", id); err != nil {
		return err
	}
	if err := checkName("partition", partition); err != nil {
		return err
	}
	_, err := c.run(ctx, true, "scontrol", "update", "jobid="+id, "partition="+partition)
	return err
}
