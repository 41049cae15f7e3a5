"""The real server's management routes: sessions and session chat, cron jobs and their schedule,
skills and toolsets, cron fire and platform events (`/api/...`, `/v1/skills`, `/v1/toolsets`)."""
